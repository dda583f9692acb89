"""Selection ops: TopK (opset11), NonZero (opset3) and Unique (opset10)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import normalize_axis, without_attrs
from vinerun.ops._shape_helpers import const_scalar, index_type, rank_of


def sortable(x: np.ndarray) -> np.ndarray:
    """A view of ``x`` NumPy can sort and compare (ml_dtypes floats widened to f32, exactly)."""
    return x.astype(np.float32) if x.dtype.kind == "V" else x


def stable_order(x: np.ndarray, axis: int, largest: bool) -> np.ndarray:
    """Positions along ``axis`` sorted by value (descending if ``largest``); ties keep index order."""
    key = sortable(x)
    if not largest:
        return np.argsort(key, axis=axis, kind="stable")
    n = x.shape[axis]
    flipped = np.flip(key, axis=axis)
    return n - 1 - np.flip(np.argsort(flipped, axis=axis, kind="stable"), axis=axis)


@register_op
class TopK(Node):
    """The k largest (``mode="max"``) or smallest values along ``axis`` and their indices.

    ``sort``: ``value`` (by value), ``index`` (by position) or ``none``. Ties are broken by the lower
    index (the ONNX requirement; ``stable`` is accepted for IR compatibility).
    """

    type_name, version, num_inputs, num_outputs = "TopK", "opset11", (2, 2), 2
    axis = Attr("int", -1)
    mode = Attr("str", "max")
    sort = Attr("str", "value")
    index_element_type = Attr("type", Type.i32)
    stable = Attr("bool", False)

    def infer(self) -> list:
        if self.mode not in ("max", "min"):
            raise ValidationError(f"mode must be 'max' or 'min', got '{self.mode}'")
        if self.sort not in ("value", "index", "none"):
            raise ValidationError(f"sort must be 'value', 'index' or 'none', got '{self.sort}'")
        it = index_type(self.index_element_type)
        et, ps = self.get_input_element_type(0), self.get_input_partial_shape(0)
        r = rank_of(ps)
        if r is None:
            return [(et, PartialShape.dynamic()), (it, PartialShape.dynamic())]
        axis = normalize_axis(self.axis, r, self)
        k = const_scalar(self, 1)
        dims = list(ps)
        if k is not None:
            if k < 0:
                raise ValidationError(f"k must not be negative, got {k}")
            d = dims[axis]
            dims[axis] = Dimension(min(k, d.get_length())) if d.is_static else Dimension(k)
        else:
            dims[axis] = Dimension()
        return [(et, PartialShape(dims)), (it, PartialShape(dims))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        k = int(np.asarray(inputs[1]).reshape(-1)[0])
        axis = normalize_axis(self.axis, x.ndim, self)
        k = min(k, x.shape[axis])
        order = np.take(stable_order(x, axis, self.mode == "max"), np.arange(k), axis=axis)
        if self.sort == "index":
            order = np.sort(order, axis=axis)
        values = np.take_along_axis(x, order, axis=axis)
        return [values, order.astype(self.index_element_type.to_dtype())]


@register_op
@without_attrs("stable")
class TopKV3(TopK):
    """TopK-3 (and TopK-1, the same attributes): no ``stable`` attribute; ties still keep index order."""

    type_name, version = "TopK", "opset3"


@register_op
@without_attrs("stable")
class TopKV1(TopK):
    """TopK-1."""

    type_name, version = "TopK", "opset1"


@register_op
class NonZero(Node):
    """Indices of the non-zero elements: shape [rank, count], one column per element, row-major order."""

    type_name, version, num_inputs = "NonZero", "opset3", (1, 1)
    output_type = Attr("type", Type.i64)

    def infer(self) -> list:
        r = rank_of(self.get_input_partial_shape(0))
        return [(index_type(self.output_type), PartialShape([Dimension() if r is None else Dimension(r),
                                                              Dimension()]))]

    def evaluate(self, inputs: list) -> list:
        x = sortable(np.asarray(inputs[0]))
        dtype = self.output_type.to_dtype()
        if x.ndim == 0:
            return [np.zeros((0, 1 if x != 0 else 0), dtype)]
        return [np.array(np.nonzero(x), dtype=dtype).reshape(x.ndim, -1)]


@register_op
class Unique(Node):
    """Unique elements (or slices along the axis in input 1) with first indices, inverse indices and counts."""

    type_name, version, num_inputs, num_outputs = "Unique", "opset10", (1, 2), 4
    sorted = Attr("bool", True)
    index_element_type = Attr("type", Type.i64)
    count_element_type = Attr("type", Type.i64)

    def infer(self) -> list:
        it, ct = index_type(self.index_element_type), index_type(self.count_element_type)
        et, ps = self.get_input_element_type(0), self.get_input_partial_shape(0)
        r = rank_of(ps)
        if self.get_input_size() < 2:
            n = ps.to_shape() if ps.is_static else None
            total = Dimension(int(np.prod(n))) if n is not None else Dimension()
            uniq = PartialShape([Dimension()])
        else:
            axis = const_scalar(self, 1)
            if r is None or axis is None:
                return [(et, PartialShape.dynamic()), (it, PartialShape([-1])), (it, PartialShape([-1])),
                        (ct, PartialShape([-1]))]
            axis = normalize_axis(axis, r, self)
            total = ps[axis]
            uniq = PartialShape([Dimension() if i == axis else d for i, d in enumerate(ps)])
        return [(et, uniq), (it, PartialShape([-1])), (it, PartialShape([total])), (ct, PartialShape([-1]))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        key = sortable(x)
        if len(inputs) < 2 or inputs[1] is None:
            key, axis = key.reshape(-1), None
            x = x.reshape(-1)
        else:
            axis = normalize_axis(int(np.asarray(inputs[1]).reshape(-1)[0]), x.ndim, self)
        _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True,
                                              axis=axis)
        inverse = inverse.reshape(-1)
        if not self.sorted:
            order = np.argsort(first, kind="stable")
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            first, counts, inverse = first[order], counts[order], rank[inverse]
        uniq = np.take(x, first, axis=0 if axis is None else axis)
        it, ct = self.index_element_type.to_dtype(), self.count_element_type.to_dtype()
        return [uniq, first.astype(it), inverse.astype(it), counts.astype(ct)]
