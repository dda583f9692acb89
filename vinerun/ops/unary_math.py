"""Element-wise unary math: Abs, Negative, Exp, Log, Sqrt, Floor, Ceiling, Round, Sign, Erf,
trigonometric and hyperbolic functions, and the IsNaN / IsInf / IsFinite tests."""

from __future__ import annotations

import math

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr
from vinerun.ir.registry import register_op
from vinerun.ir.types import Type
from vinerun.ops._base import UnaryElementwise


def _is_integral(x: np.ndarray) -> bool:
    return x.dtype.kind in "iub" or x.dtype.name.startswith(("int", "uint"))


class FloatMath(UnaryElementwise):
    """A unary function computed in float64 and rounded back to the input type.

    Narrow types (f16, bf16, f8) then get correctly rounded results; integer inputs
    (where OpenVINO allows them) are rounded toward zero like OpenVINO's reference.
    """

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        with np.errstate(all="ignore"):
            y = self.fn(x.astype(np.float64))
        if _is_integral(x):
            y = np.trunc(np.nan_to_num(y))
        return [np.asarray(y).astype(x.dtype)]


@register_op
class Abs(UnaryElementwise):
    """``|x|``."""

    type_name = "Abs"

    def fn(self, x):
        return x if x.dtype.kind in "ub" else np.abs(x)


@register_op
class Negative(UnaryElementwise):
    """``-x`` (wrapping for unsigned integers)."""

    type_name = "Negative"

    def fn(self, x):
        if x.dtype.kind == "u":
            return (np.zeros((), x.dtype) - x).astype(x.dtype)
        return np.negative(x)


@register_op
class Sign(UnaryElementwise):
    """-1, 0 or 1 by the sign of ``x``."""

    type_name = "Sign"

    def fn(self, x):
        return np.sign(x.astype(np.float64) if x.dtype.kind not in "fiu" else x)


@register_op
class Floor(UnaryElementwise):
    """Round down (integers unchanged)."""

    type_name = "Floor"

    def fn(self, x):
        return x if _is_integral(x) else np.floor(x.astype(np.float64))


@register_op
class Ceiling(UnaryElementwise):
    """Round up (integers unchanged)."""

    type_name = "Ceiling"

    def fn(self, x):
        return x if _is_integral(x) else np.ceil(x.astype(np.float64))


@register_op
class Round(UnaryElementwise):
    """Rounds to the nearest integer; ``mode`` picks how halves go (to even, or away from zero)."""

    type_name, version = "Round", "opset5"
    mode = Attr("str", "half_to_even")

    def infer(self) -> list:
        if self.mode not in ("half_to_even", "half_away_from_zero"):
            raise ValidationError(f"mode must be 'half_to_even' or 'half_away_from_zero', got {self.mode!r}")
        return super().infer()

    def fn(self, x):
        if _is_integral(x):
            return x
        x = x.astype(np.float64)
        if self.mode == "half_to_even":
            return np.round(x)
        return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _float_op(name: str, ufunc: np.ufunc | np.vectorize, version: str = "opset1") -> type:
    cls = type(name, (FloatMath,), {"type_name": name, "version": version,
                                    "fn": lambda self, x: ufunc(x),
                                    "__doc__": f"Element-wise {name} (computed in float64)."})
    cls.__module__ = __name__
    return register_op(cls)


_erf = np.vectorize(math.erf, otypes=[np.float64])

Exp = _float_op("Exp", np.exp)
Log = _float_op("Log", np.log)
Sqrt = _float_op("Sqrt", np.sqrt)
Erf = _float_op("Erf", _erf)
Sin = _float_op("Sin", np.sin)
Cos = _float_op("Cos", np.cos)
Tan = _float_op("Tan", np.tan)
Asin = _float_op("Asin", np.arcsin)
Acos = _float_op("Acos", np.arccos)
Atan = _float_op("Atan", np.arctan)
Sinh = _float_op("Sinh", np.sinh)
Cosh = _float_op("Cosh", np.cosh)
Asinh = _float_op("Asinh", np.arcsinh, "opset4")
Acosh = _float_op("Acosh", np.arccosh, "opset4")
Atanh = _float_op("Atanh", np.arctanh, "opset4")


class _FloatTest(UnaryElementwise):
    """A per-element predicate on floats; the output is boolean."""

    version = "opset10"

    def infer(self) -> list:
        return [(Type.boolean, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        wide = x.astype(np.float64) if not _is_integral(x) else np.zeros(x.shape)
        return [np.asarray(self.fn(wide), dtype=np.bool_)]


@register_op
class IsNaN(_FloatTest):
    """True where the input is NaN."""

    type_name = "IsNaN"

    def fn(self, x):
        return np.isnan(x)


@register_op
class IsFinite(_FloatTest):
    """True where the input is neither infinite nor NaN."""

    type_name = "IsFinite"

    def fn(self, x):
        return np.isfinite(x)


@register_op
class IsInf(_FloatTest):
    """True where the input is infinite; ``detect_negative`` / ``detect_positive`` select the sign."""

    type_name = "IsInf"
    detect_negative = Attr("bool", True)
    detect_positive = Attr("bool", True)

    def fn(self, x):
        return ((x == np.inf) & self.detect_positive) | ((x == -np.inf) & self.detect_negative)
