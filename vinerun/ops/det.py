"""ONNX Det: determinants of the square matrices in the last two dims."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ops._widen import widen


@register_op
class Det(Node):
    """``[..., M, M] -> [...]``: the determinant of each matrix (float types)."""

    type_name, version, num_inputs = "Det", "onnx", (1, 1)

    def infer(self) -> list:
        et, shape = self.get_input_element_type(0), self.get_input_partial_shape(0)
        if et.is_static() and not et.is_real():
            raise ValidationError(f"input element type must be floating point, got {et.get_type_name()}")
        if shape.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        dims = list(shape)
        if len(dims) < 2:
            raise ValidationError(f"input must have rank >= 2, got shape {shape}")
        if not dims[-1].compatible(dims[-2]):
            raise ValidationError(f"matrices must be square, got shape {shape}")
        return [(et, PartialShape(dims[:-2]))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        return [np.asarray(np.linalg.det(widen(x))).astype(x.dtype, copy=False)]
