"""Binary arithmetic (opset1): Add, Subtract, Multiply, Divide, Power, Maximum, Minimum, ..."""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Attr
from vinerun.ir.registry import register_op
from vinerun.ops._base import BinaryElementwise


@register_op
class Add(BinaryElementwise):
    type_name = "Add"

    def fn(self, a, b):
        return np.add(a, b)


@register_op
class Subtract(BinaryElementwise):
    type_name = "Subtract"

    def fn(self, a, b):
        return np.subtract(a, b)


@register_op
class Multiply(BinaryElementwise):
    type_name = "Multiply"

    def fn(self, a, b):
        return np.multiply(a, b)


@register_op
class Divide(BinaryElementwise):
    """Division; integer division truncates toward zero unless ``m_pythondiv`` (floor, the default)."""

    type_name = "Divide"
    m_pythondiv = Attr("bool", True)

    def fn(self, a, b):
        if a.dtype.kind in "iu":
            if self.m_pythondiv:
                return np.floor_divide(a, b)
            q = np.trunc(np.divide(a.astype(np.float64), b))
            return q.astype(a.dtype)
        return np.divide(a, b)


@register_op
class Power(BinaryElementwise):
    type_name = "Power"

    def fn(self, a, b):
        if a.dtype.kind in "iu":
            return np.power(a.astype(np.float64), b).astype(a.dtype)
        return np.power(a, b)


@register_op
class Maximum(BinaryElementwise):
    type_name = "Maximum"

    def fn(self, a, b):
        return np.maximum(a, b)


@register_op
class Minimum(BinaryElementwise):
    type_name = "Minimum"

    def fn(self, a, b):
        return np.minimum(a, b)


@register_op
class SquaredDifference(BinaryElementwise):
    type_name = "SquaredDifference"

    def fn(self, a, b):
        return np.square(np.subtract(a, b))


@register_op
class FloorMod(BinaryElementwise):
    """Remainder with the sign of the divisor (Python's %)."""

    type_name = "FloorMod"

    def fn(self, a, b):
        return np.mod(a, b)


@register_op
class Mod(BinaryElementwise):
    """Remainder with the sign of the dividend (C's fmod)."""

    type_name = "Mod"

    def fn(self, a, b):
        return np.fmod(a, b)
