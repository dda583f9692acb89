"""Boolean logic (opset1): LogicalAnd, LogicalOr, LogicalXor, LogicalNot, and Select."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op
from vinerun.ir.types import Type
from vinerun.ops._base import BinaryElementwise, UnaryElementwise


class _Logical(BinaryElementwise):
    output_type = Type.boolean

    def infer(self) -> list:
        for i in range(2):
            et = self.get_input_element_type(i)
            if et.is_static() and et != Type.boolean:
                raise ValidationError(f"input {i} must be boolean, got {et.get_type_name()}")
        return super().infer()


@register_op
class LogicalAnd(_Logical):
    """``a and b`` on booleans."""

    type_name = "LogicalAnd"

    def fn(self, a, b):
        return np.logical_and(a, b)


@register_op
class LogicalOr(_Logical):
    """``a or b`` on booleans."""

    type_name = "LogicalOr"

    def fn(self, a, b):
        return np.logical_or(a, b)


@register_op
class LogicalXor(_Logical):
    """``a xor b`` on booleans."""

    type_name = "LogicalXor"

    def fn(self, a, b):
        return np.logical_xor(a, b)


@register_op
class LogicalNot(UnaryElementwise):
    """``not x`` on booleans."""

    type_name = "LogicalNot"

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        if et.is_static() and et != Type.boolean:
            raise ValidationError(f"input must be boolean, got {et.get_type_name()}")
        return [(Type.boolean, self.get_input_partial_shape(0))]

    def fn(self, x):
        return np.logical_not(x)


@register_op
class Select(Node):
    """``then`` where ``cond`` is true, else ``else``; the three inputs broadcast NumPy-style."""

    type_name, version, num_inputs = "Select", "opset1", (3, 3)
    auto_broadcast = Attr("str", "numpy")

    def infer(self) -> list:
        cond = self.get_input_element_type(0)
        if cond.is_static() and cond != Type.boolean:
            raise ValidationError(f"the condition must be boolean, got {cond.get_type_name()}")
        a, b = self.get_input_element_type(1), self.get_input_element_type(2)
        et = a.merge(b)
        if et is None:
            raise ValidationError(f"'then' and 'else' types differ: {a.get_type_name()} and {b.get_type_name()}")
        shape = broadcast_shapes(self.get_input_partial_shape(1), self.get_input_partial_shape(2))
        return [(et, broadcast_shapes(self.get_input_partial_shape(0), shape))]

    def evaluate(self, inputs: list) -> list:
        cond, a, b = inputs
        return [np.asarray(np.where(cond, a, b)).astype(a.dtype, copy=False)]
