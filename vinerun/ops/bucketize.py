"""Bucketize (opset3) and SearchSorted (opset15): positions of values among sorted boundaries."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ops._shape_helpers import index_type, rank_of


@register_op
class Bucketize(Node):
    """The bucket of each value: with ``with_right_bound`` bucket ``i`` holds ``(b[i-1], b[i]]``,
    without it ``[b[i-1], b[i])``; values below ``b[0]`` are in bucket 0, above the last in ``len(b)``."""

    type_name, version, num_inputs = "Bucketize", "opset3", (2, 2)
    output_type = Attr("type", "i64")
    with_right_bound = Attr("bool", True)

    def infer(self) -> list:
        r = rank_of(self.get_input_partial_shape(1))
        if r is not None and r != 1:
            raise ValidationError(f"buckets must be a 1D tensor, got rank {r}")
        for i, what in ((0, "data"), (1, "buckets")):
            et = self.get_input_element_type(i)
            if et.is_static() and not (et.is_real() or et.is_integral_number()):
                raise ValidationError(f"{what} must be numeric, got {et.get_type_name()}")
        return [(index_type(self.output_type), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x, buckets = inputs
        side = "left" if self.with_right_bound else "right"
        out = np.searchsorted(np.asarray(buckets).reshape(-1), x, side=side)
        return [np.asarray(out).astype(index_type(self.output_type).to_dtype())]


@register_op
class SearchSorted(Node):
    """For each value, the index where it would go in the sorted innermost rows of ``sorted_sequence``
    (the first such index, or the last with ``right_mode``)."""

    type_name, version, num_inputs = "SearchSorted", "opset15", (2, 2)
    right_mode = Attr("bool", False)
    output_type = Attr("type", "i64")

    def infer(self) -> list:
        seq, values = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        rs, rv = rank_of(seq), rank_of(values)
        if rs is not None and rs < 1:
            raise ValidationError("sorted_sequence must have rank 1 or more")
        if rs is not None and rv is not None and rs != 1:
            if rs != rv:
                raise ValidationError(f"sorted_sequence (rank {rs}) and values (rank {rv}) must have the same rank")
            if not PartialShape(list(seq)[:-1]).compatible(PartialShape(list(values)[:-1])):
                raise ValidationError(f"the leading dimensions of sorted_sequence {seq} and values {values} differ")
        a, b = self.get_input_element_type(0), self.get_input_element_type(1)
        if a.is_static() and b.is_static() and a != b:
            raise ValidationError(f"input element types differ: {a.get_type_name()} and {b.get_type_name()}")
        return [(index_type(self.output_type), values)]

    def evaluate(self, inputs: list) -> list:
        seq, values = np.asarray(inputs[0]), np.asarray(inputs[1])
        side = "right" if self.right_mode else "left"
        dtype = index_type(self.output_type).to_dtype()
        if seq.ndim == 1:
            return [np.searchsorted(seq, values, side=side).astype(dtype)]
        rows = seq.reshape(-1, seq.shape[-1])
        vals = values.reshape(rows.shape[0], -1)
        out = np.stack([np.searchsorted(r, v, side=side) for r, v in zip(rows, vals, strict=True)])
        return [out.reshape(values.shape).astype(dtype)]
