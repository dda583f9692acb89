"""Generated tensors: Range (opset4), Eye (opset9) and OneHot (opset1, opset16)."""

from __future__ import annotations

import math

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import normalize_axis, without_attrs
from vinerun.ops._shape_helpers import const_ints, const_scalar, rank_of, shape_length


def range_length(start: float, stop: float, step: float) -> int:
    if step == 0:
        raise ValidationError("the Range step cannot be 0")
    return max(math.ceil((stop - start) / step), 0)


@register_op
class Range(Node):
    """start, start + step, ... up to (excluding) stop, in ``output_type``."""

    type_name, version, num_inputs = "Range", "opset4", (3, 3)
    output_type = Attr("type", Type.i64)

    def infer(self) -> list:
        vals = [self.const_input(i) for i in range(3)]
        length = Dimension()
        if all(v is not None for v in vals):
            start, stop, step = (np.asarray(v).reshape(-1)[0].item() for v in vals)  # type: ignore[union-attr]
            length = Dimension(range_length(start, stop, step))
        return [(self.output_type, PartialShape([length]))]

    def evaluate(self, inputs: list) -> list:
        dtype = self.output_type.to_dtype()
        real = self.output_type.is_real()
        # the inputs are taken in the output type; element i is start + i * step
        start, stop, step = (np.asarray(v).reshape(-1)[0].astype(dtype) for v in inputs)
        as_num = float if real else int
        n = range_length(as_num(start), as_num(stop), as_num(step))
        acc = np.float64 if real else np.int64
        out = np.asarray(as_num(start), acc) + np.arange(n, dtype=acc) * np.asarray(as_num(step), acc)
        return [out.astype(dtype)]


@register_op
@without_attrs("output_type")
class RangeV1(Range):
    """Range-1: the output takes the inputs' element type."""

    type_name, version = "Range", "opset1"

    @property
    def output_type(self) -> Type:  # type: ignore[override]
        return self.get_input_element_type(0)


@register_op
class Eye(Node):
    """A (batch of) num_rows x num_columns matrix with ones on diagonal ``diagonal_index``."""

    type_name, version, num_inputs = "Eye", "opset9", (3, 4)
    output_type = Attr("type", Type.f32)

    def infer(self) -> list:
        rows, cols = const_scalar(self, 0), const_scalar(self, 1)
        dims = [Dimension(rows) if rows is not None else Dimension(),
                Dimension(cols) if cols is not None else Dimension()]
        if self.get_input_size() > 3:
            batch = const_ints(self, 3)
            if batch is None:
                n = shape_length(self, 3)
                if n is None or n.is_dynamic:
                    return [(self.output_type, PartialShape.dynamic())]
                return [(self.output_type, PartialShape.dynamic(n.get_length() + 2))]
            dims = [Dimension(b) for b in batch] + dims
        return [(self.output_type, PartialShape(dims))]

    def evaluate(self, inputs: list) -> list:
        rows, cols, k = (int(np.asarray(v).reshape(-1)[0]) for v in inputs[:3])
        if rows < 0 or cols < 0:
            raise ValidationError(f"Eye needs non-negative sizes, got {rows} x {cols}")
        eye = np.eye(rows, cols, k, dtype=self.output_type.to_dtype())
        if len(inputs) > 3 and inputs[3] is not None:
            batch = [int(v) for v in np.asarray(inputs[3]).reshape(-1)]
            eye = np.array(np.broadcast_to(eye, batch + [rows, cols]), order="C")
        return [eye]


@register_op
class OneHot(Node):
    """One-hot encoding along ``axis``: on_value where the index matches, off_value elsewhere.

    ``negative_indices_mode``: ``ignore_negative`` (negative indices match nothing) or ``normalize``
    (indices in [-depth, -1] count from the end).
    """

    type_name, version, num_inputs = "OneHot", "opset16", (4, 4)
    axis = Attr("int", -1)
    negative_indices_mode = Attr("str", "ignore_negative")

    def infer(self) -> list:
        if self.negative_indices_mode not in ("ignore_negative", "normalize"):
            raise ValidationError(f"unknown negative_indices_mode '{self.negative_indices_mode}'")
        et, ps = self.get_input_element_type(2), self.get_input_partial_shape(0)
        r = rank_of(ps)
        if r is None:
            return [(et, PartialShape.dynamic())]
        axis = normalize_axis(self.axis, r + 1, self)
        depth = const_scalar(self, 1)
        dims = list(ps)
        dims.insert(axis, Dimension(depth) if depth is not None else Dimension())
        return [(et, PartialShape(dims))]

    def evaluate(self, inputs: list) -> list:
        indices, depth, on, off = inputs
        depth = int(np.asarray(depth).reshape(-1)[0])
        idx = np.asarray(indices).astype(np.int64)
        if self.negative_indices_mode == "normalize":
            idx = np.where(idx < 0, idx + depth, idx)
        axis = normalize_axis(self.axis, idx.ndim + 1, self)
        hot = np.expand_dims(idx, axis) == np.arange(depth).reshape([-1] + [1] * (idx.ndim - axis))
        on, off = np.asarray(on).reshape(()), np.asarray(off).reshape(())
        return [np.where(hot, on, off).astype(on.dtype, copy=False)]


@register_op
@without_attrs("negative_indices_mode")
class OneHotV1(OneHot):
    """OneHot-1: negative indices match nothing."""

    type_name, version = "OneHot", "opset1"
    negative_indices_mode = Attr("str", "ignore_negative")

