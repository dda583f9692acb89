"""ONNX element-wise arithmetic and unary math: Add ... Pow, Max/Min/Sum/Mean, Abs ... Atanh, Round."""

from __future__ import annotations

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.frontends.onnx.translators._util import scalar_like
from vinerun.ir.node import Output
from vinerun.ops import unary_math as um
from vinerun.ops.arithmetic import Add, Divide, FloorMod, Maximum, Minimum, Mod, Multiply, Power, Subtract
from vinerun.ops.convert import Convert


def _register_binary(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        return cls(ctx.input(0), ctx.input(1)).output(0)


for _name, _cls in [("Add", Add), ("Sub", Subtract), ("Mul", Multiply)]:
    _register_binary(_name, _cls)


@onnx_op("Div")
def div(ctx):
    # ONNX integer division truncates toward zero
    return Divide(ctx.input(0), ctx.input(1), m_pythondiv=False).output(0)


@onnx_op("Mod")
def mod(ctx):
    cls = Mod if ctx.attr("fmod", 0) else FloorMod
    return cls(ctx.input(0), ctx.input(1)).output(0)


@onnx_op("Pow")
def pow_(ctx):
    """Pow allows different base and exponent types; the result has the base's type."""
    base, exponent = ctx.input(0), ctx.input(1)
    bt, et = base.element_type, exponent.element_type
    if bt.is_dynamic() or et.is_dynamic() or bt == et:
        return Power(base, exponent).output(0)
    if bt.is_real() or not et.is_real():
        return Power(base, Convert(exponent, destination_type=bt)).output(0)
    # integer base, float exponent: compute in the exponent's type, then convert back
    wide = Power(Convert(base, destination_type=et), exponent)
    return Convert(wide, destination_type=bt).output(0)


def _register_variadic(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        return _fold(cls, [ctx.input(i) for i in range(len(ctx.inputs))])


def _fold(cls: type, values: list[Output]) -> Output:
    acc = values[0]
    for v in values[1:]:
        acc = cls(acc, v).output(0)
    return acc


for _name, _cls in [("Max", Maximum), ("Min", Minimum), ("Sum", Add)]:
    _register_variadic(_name, _cls)


@onnx_op("Mean")
def mean(ctx):
    values = [ctx.input(i) for i in range(len(ctx.inputs))]
    total = _fold(Add, values)
    if len(values) == 1:
        return total
    return Divide(total, scalar_like(len(values), total)).output(0)


_UNARY = {"Abs": um.Abs, "Neg": um.Negative, "Exp": um.Exp, "Log": um.Log, "Sqrt": um.Sqrt,
          "Floor": um.Floor, "Ceil": um.Ceiling, "Sign": um.Sign, "Erf": um.Erf, "Sin": um.Sin,
          "Cos": um.Cos, "Tan": um.Tan, "Asin": um.Asin, "Acos": um.Acos, "Atan": um.Atan,
          "Sinh": um.Sinh, "Cosh": um.Cosh, "Asinh": um.Asinh, "Acosh": um.Acosh, "Atanh": um.Atanh,
          "IsNaN": um.IsNaN}


def _register_unary(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        return cls(ctx.input(0)).output(0)


for _name, _cls in _UNARY.items():
    _register_unary(_name, _cls)


@onnx_op("Reciprocal")
def reciprocal(ctx):
    x = ctx.input(0)
    return Divide(scalar_like(1, x), x).output(0)


@onnx_op("Round")
def round_(ctx):
    return um.Round(ctx.input(0), mode="half_to_even").output(0)


@onnx_op("IsInf")
def isinf(ctx):
    return um.IsInf(ctx.input(0), detect_negative=bool(ctx.attr("detect_negative", 1)),
                    detect_positive=bool(ctx.attr("detect_positive", 1))).output(0)
