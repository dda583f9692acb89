"""GRN (opset1): global response normalization across channels."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._shape_helpers import rank_of


@register_op
class GRN(Node):
    """``x / sqrt(sum(x ** 2 over channels) + bias)`` for inputs of rank 2 to 4 (channels: axis 1)."""

    type_name, version, num_inputs = "GRN", "opset1", (1, 1)
    bias = Attr("float")

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        if et.is_static() and not et.is_real():
            raise ValidationError(f"the input must be a floating-point tensor, got {et.get_type_name()}")
        r = rank_of(self.get_input_partial_shape(0))
        if r is not None and not 2 <= r <= 4:
            raise ValidationError(f"the input must have rank 2 to 4, got {r}")
        return [(et, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        wide = x.astype(np.float64)
        norm = np.sqrt(np.sum(wide * wide, axis=1, keepdims=True) + self.bias)
        return [(wide / norm).astype(x.dtype)]
