"""Element-wise comparisons (opset1): Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual.

Both inputs have one element type (strings allowed for Equal / NotEqual); the output is boolean.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.registry import register_op
from vinerun.ir.types import Type
from vinerun.ops._base import BinaryElementwise


class Comparison(BinaryElementwise):
    """A NumPy-broadcasting comparison with a boolean output."""

    output_type = Type.boolean


@register_op
class Equal(Comparison):
    """``a == b``."""

    type_name = "Equal"

    def fn(self, a, b):
        return np.equal(a, b)


@register_op
class NotEqual(Comparison):
    """``a != b``."""

    type_name = "NotEqual"

    def fn(self, a, b):
        return np.not_equal(a, b)


@register_op
class Less(Comparison):
    """``a < b``."""

    type_name = "Less"

    def fn(self, a, b):
        return np.less(a, b)


@register_op
class LessEqual(Comparison):
    """``a <= b``."""

    type_name = "LessEqual"

    def fn(self, a, b):
        return np.less_equal(a, b)


@register_op
class Greater(Comparison):
    """``a > b``."""

    type_name = "Greater"

    def fn(self, a, b):
        return np.greater(a, b)


@register_op
class GreaterEqual(Comparison):
    """``a >= b``."""

    type_name = "GreaterEqual"

    def fn(self, a, b):
        return np.greater_equal(a, b)
