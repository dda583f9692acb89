"""Roll (opset7): shift elements along axes, wrapping around."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.registry import register_op
from vinerun.ops._shape_helpers import check_index_type, const_ints, normalize_axes, rank_of


@register_op
class Roll(Node):
    """``Roll(data, shift, axes)``: ``shift`` (one value for every axis, or one per axis) along ``axes``;
    an axis may repeat (its shifts add up)."""

    type_name, version, num_inputs = "Roll", "opset7", (3, 3)

    def infer(self) -> list:
        check_index_type(self, 1, "shift")
        check_index_type(self, 2, "axes")
        for i, what in ((1, "shift"), (2, "axes")):
            r = rank_of(self.get_input_partial_shape(i))
            if r is not None and r > 1:
                raise ValidationError(f"{what} must be a scalar or 1D tensor, got rank {r}")
        shift, axes = const_ints(self, 1), const_ints(self, 2)
        rank = rank_of(self.get_input_partial_shape(0))
        if shift is not None and axes is not None and len(shift) != 1 and len(shift) != len(axes):
            raise ValidationError(f"shift ({len(shift)} values) must be a scalar or match axes ({len(axes)})")
        if axes is not None and rank is not None:
            for a in axes:
                if not -rank <= a < rank:
                    raise ValidationError(f"axis {a} is out of range for rank {rank}")
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x, shift, axes = inputs
        shift = np.asarray(shift).reshape(-1).astype(np.int64)
        axes = np.asarray(axes).reshape(-1).astype(np.int64)
        if shift.size == 1:
            shift = np.repeat(shift, axes.size)
        out = x
        for s, a in zip(shift.tolist(), axes.tolist(), strict=True):
            a = normalize_axes([a], x.ndim)[0] if x.ndim else 0
            out = np.roll(out, s, axis=a)
        return [np.ascontiguousarray(out)]
