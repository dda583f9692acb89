"""Binary arithmetic (opset1): Add, Subtract, Multiply, Divide, Power, Maximum, Minimum, ..."""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Attr
from vinerun.ir.registry import register_op
from vinerun.ops._base import BinaryElementwise


def _is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "iu"


@register_op
class Add(BinaryElementwise):
    """``a + b``."""

    type_name = "Add"

    def fn(self, a, b):
        return np.add(a, b)


@register_op
class Subtract(BinaryElementwise):
    """``a - b``."""

    type_name = "Subtract"

    def fn(self, a, b):
        return np.subtract(a, b)


@register_op
class Multiply(BinaryElementwise):
    """``a * b``."""

    type_name = "Multiply"

    def fn(self, a, b):
        return np.multiply(a, b)


@register_op
class Divide(BinaryElementwise):
    """Division; integer division floors with ``m_pythondiv`` (the default), else truncates toward zero.

    Integer division by zero gives 0.
    """

    type_name = "Divide"
    m_pythondiv = Attr("bool", True)

    def fn(self, a, b):
        with np.errstate(all="ignore"):
            if not _is_int(a):
                return np.divide(a, b)
            zero = b == 0
            b = np.where(zero, np.ones((), b.dtype), b)
            q = np.floor_divide(a, b)
            if not self.m_pythondiv and a.dtype.kind == "i":
                # floor and truncation differ where the remainder is non-zero and the signs differ
                q = q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
            return np.where(zero, np.zeros((), a.dtype), q)


@register_op
class Power(BinaryElementwise):
    """a ** b; an integer base with a negative integer exponent gives trunc(a ** b) as a float would."""

    type_name = "Power"

    def fn(self, a, b):
        with np.errstate(all="ignore"):
            if _is_int(a) and _is_int(b):
                neg = b < 0
                exact = np.power(a, np.where(neg, 0, b).astype(b.dtype))
                if not neg.any():
                    return exact
                approx = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
                return np.where(neg, np.nan_to_num(approx).astype(a.dtype), exact)
            if _is_int(a):
                return np.trunc(np.power(a.astype(np.float64), b))
            return np.power(a.astype(np.float64), b.astype(np.float64))


@register_op
class Maximum(BinaryElementwise):
    """The larger of ``a`` and ``b``."""

    type_name = "Maximum"

    def fn(self, a, b):
        return np.maximum(a, b)


@register_op
class Minimum(BinaryElementwise):
    """The smaller of ``a`` and ``b``."""

    type_name = "Minimum"

    def fn(self, a, b):
        return np.minimum(a, b)


@register_op
class SquaredDifference(BinaryElementwise):
    """``(a - b)^2``."""

    type_name = "SquaredDifference"

    def fn(self, a, b):
        return np.square(np.subtract(a, b))


@register_op
class FloorMod(BinaryElementwise):
    """Remainder with the sign of the divisor (Python's %); integer x % 0 gives 0."""

    type_name = "FloorMod"

    def fn(self, a, b):
        with np.errstate(all="ignore"):
            if _is_int(a):
                zero = b == 0
                return np.where(zero, 0, np.mod(a, np.where(zero, np.ones((), b.dtype), b)))
            return np.mod(a, b)


@register_op
class Mod(BinaryElementwise):
    """Remainder with the sign of the dividend (C's fmod); integer x % 0 gives 0."""

    type_name = "Mod"

    def fn(self, a, b):
        with np.errstate(all="ignore"):
            if _is_int(a):
                zero = b == 0
                return np.where(zero, 0, np.fmod(a, np.where(zero, np.ones((), b.dtype), b)))
            return np.fmod(a, b)
