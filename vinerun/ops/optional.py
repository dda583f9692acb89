"""ONNX optional ops (ONNX-only, version "onnx"). An empty optional is ``None`` at runtime."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type


@register_op
class Optional(Node):
    """``Optional([x])``: an optional holding ``x``, or an empty one of ``element_type`` without input."""

    type_name, version, num_inputs = "Optional", "onnx", (0, 1)
    element_type = Attr("type", Type.dynamic)

    def infer(self) -> list:
        if self.get_input_size():
            return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]
        return [(self.element_type, PartialShape.dynamic())]

    def evaluate(self, inputs: list) -> list:
        return [inputs[0] if inputs else None]


@register_op
class OptionalHasElement(Node):
    """True when the input optional holds a value (false for an absent input)."""

    type_name, version, num_inputs = "OptionalHasElement", "onnx", (0, 1)

    def infer(self) -> list:
        return [(Type.boolean, PartialShape([]))]

    def evaluate(self, inputs: list) -> list:
        return [np.array(bool(inputs) and inputs[0] is not None)]


@register_op
class OptionalGetElement(Node):
    """The value an optional holds (a tensor or a sequence passes through); fails if it is empty."""

    type_name, version, num_inputs = "OptionalGetElement", "onnx", (1, 1)

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        if inputs[0] is None:
            raise ValidationError("the optional input is empty")
        return [inputs[0]]
