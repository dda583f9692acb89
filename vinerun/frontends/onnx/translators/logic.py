"""ONNX comparisons, boolean logic, Where, and bitwise ops."""

from __future__ import annotations

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops import bitwise as bw
from vinerun.ops import comparison as cmp
from vinerun.ops import logical as lg

_BINARY = {"Equal": cmp.Equal, "Less": cmp.Less, "Greater": cmp.Greater, "LessOrEqual": cmp.LessEqual,
           "GreaterOrEqual": cmp.GreaterEqual, "And": lg.LogicalAnd, "Or": lg.LogicalOr, "Xor": lg.LogicalXor,
           "BitwiseAnd": bw.BitwiseAnd, "BitwiseOr": bw.BitwiseOr, "BitwiseXor": bw.BitwiseXor}


def _register_binary(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        return cls(ctx.input(0), ctx.input(1)).output(0)


for _name, _cls in _BINARY.items():
    _register_binary(_name, _cls)


@onnx_op("Not")
def not_(ctx):
    return lg.LogicalNot(ctx.input(0)).output(0)


@onnx_op("BitwiseNot")
def bitwise_not(ctx):
    return bw.BitwiseNot(ctx.input(0)).output(0)


@onnx_op("BitShift")
def bit_shift(ctx):
    direction = ctx.attr("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.unsupported(f"direction must be LEFT or RIGHT, got {direction!r}")
    cls = bw.BitwiseLeftShift if direction == "LEFT" else bw.BitwiseRightShift
    return cls(ctx.input(0), ctx.input(1)).output(0)


@onnx_op("Where")
def where(ctx):
    return lg.Select(ctx.input(0), ctx.input(1), ctx.input(2)).output(0)
