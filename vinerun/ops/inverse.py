"""Inverse (opset14): the inverse (or its adjoint, the conjugate transpose) of each innermost square matrix."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._shape_helpers import rank_of


@register_op
class Inverse(Node):
    """``inv(A)`` of each ``[..., N, N]`` matrix; with ``adjoint`` its conjugate transpose."""

    type_name, version, num_inputs = "Inverse", "opset14", (1, 1)
    adjoint = Attr("bool", False)

    def infer(self) -> list:
        ps = self.get_input_partial_shape(0)
        et = self.get_input_element_type(0)
        if et.is_static() and not et.is_real():
            raise ValidationError(f"the input must be a floating-point tensor, got {et.get_type_name()}")
        r = rank_of(ps)
        if r is not None:
            if r < 2:
                raise ValidationError(f"the input must have rank 2 or more, got {r}")
            a, b = ps[r - 2], ps[r - 1]
            if a.is_static and b.is_static and a != b:
                raise ValidationError(f"the innermost matrices must be square, got {ps}")
        return [(et, ps)]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        wide = x.astype(np.float64)
        inv = np.linalg.inv(wide)
        if self.adjoint:
            inv = np.swapaxes(inv, -1, -2)  # real matrices: the conjugate transpose is the transpose
        return [inv.astype(x.dtype)]
