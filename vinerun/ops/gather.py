"""Gather (opset7, opset8), GatherElements (opset6), GatherND (opset8): reading by index."""

from __future__ import annotations

import math

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._base import normalize_axis, without_attrs
from vinerun.ops._shape_helpers import check_index_type, const_scalar, partial_ints, rank_of


def _wrap(indices: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices made non-negative, and a mask of those in range."""
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + size, idx)
    ok = (idx >= 0) & (idx < size)
    return np.where(ok, idx, 0), ok


def _batch_dims(value: int, indices_rank: int) -> int:
    b = value + indices_rank if value < 0 else value
    if not 0 <= b <= indices_rank:
        raise ValidationError(f"batch_dims {value} is out of range for indices of rank {indices_rank}")
    return b


@register_op
class Gather(Node):
    """Take slices of input 0 along the axis (input 2) at the indices (input 1).

    The first ``batch_dims`` dims of data and indices are batch dims that pair up; negative indices
    count from the end; indices out of range give zeros.
    """

    type_name, version, num_inputs = "Gather", "opset8", (3, 3)
    batch_dims = Attr("int", 0)

    def infer(self) -> list:
        check_index_type(self, 1, "indices")
        data, idx = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        et = self.get_input_element_type(0)
        rd, ri, axis = rank_of(data), rank_of(idx), const_scalar(self, 2)
        if rd is None or ri is None:
            return [(et, PartialShape.dynamic())]
        b = _batch_dims(self.batch_dims, ri)
        if axis is None:
            return [(et, PartialShape.dynamic(rd - 1 + ri - b))]
        axis = normalize_axis(axis, rd, self)
        if axis < b:
            raise ValidationError(f"axis {axis} must not be less than batch_dims {b}")
        out = list(data)[:axis] + list(idx)[b:] + list(data)[axis + 1:]
        for i in range(b):
            m = data[i].merge(idx[i])
            if m is None:
                raise ValidationError(f"batch dim {i} differs: data {data}, indices {idx}")
            out[i] = m
        return [(et, PartialShape(out))]

    def partial_value(self) -> list[int | None] | None:
        """Picks from a partially known 1-D value at constant indices (shape arithmetic)."""
        values, indices = partial_ints(self, 0), self.const_input(1)
        if values is None or indices is None or rank_of(self.get_input_partial_shape(0)) != 1:
            return None
        n = len(values)
        picked = [int(i) + n if i < 0 else int(i) for i in np.asarray(indices).reshape(-1)]
        return None if any(not 0 <= i < n for i in picked) else [values[i] for i in picked]

    def evaluate(self, inputs: list) -> list:
        data, indices = inputs[0], np.asarray(inputs[1])
        axis = normalize_axis(int(np.asarray(inputs[2]).reshape(-1)[0]), data.ndim, self)
        b = _batch_dims(self.batch_dims, indices.ndim)
        idx, ok = _wrap(indices, data.shape[axis])
        batch = data.shape[:b]
        nb = math.prod(batch)
        d = data.reshape((nb,) + data.shape[b:])
        i, m = idx.reshape((nb,) + idx.shape[b:]), ok.reshape((nb,) + ok.shape[b:])
        parts = []
        for k in range(nb):
            taken = np.take(d[k], i[k], axis=axis - b)
            mask = m[k].reshape((1,) * (axis - b) + m[k].shape + (1,) * (data.ndim - axis - 1))
            parts.append(np.where(mask, taken, np.zeros((), data.dtype)).astype(data.dtype, copy=False))
        out_shape = data.shape[:axis] + indices.shape[b:] + data.shape[axis + 1:]
        if nb == 0:
            return [np.zeros(out_shape, data.dtype)]
        return [np.stack(parts).reshape(out_shape)]


@register_op
class GatherV7(Gather):
    """Gather-7: as Gather-8 (negative indices are accepted too)."""

    type_name, version = "Gather", "opset7"


@register_op
@without_attrs("batch_dims")
class GatherV1(Gather):
    """Gather-1: no batch dims."""

    type_name, version = "Gather", "opset1"


@register_op
class GatherElements(Node):
    """Pick one element per index along ``axis``: out[i][j] = data[indices[i][j]][j] for axis 0."""

    type_name, version, num_inputs = "GatherElements", "opset6", (2, 2)
    axis = Attr("int", 0)

    def infer(self) -> list:
        check_index_type(self, 1, "indices")
        data, idx = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        rd, ri = rank_of(data), rank_of(idx)
        if rd is not None and ri is not None and rd != ri:
            raise ValidationError(f"data {data} and indices {idx} must have the same rank")
        if rd is not None:
            normalize_axis(self.axis, rd, self)
        return [(self.get_input_element_type(0), idx)]

    def evaluate(self, inputs: list) -> list:
        data, indices = inputs
        axis = normalize_axis(self.axis, data.ndim, self)
        idx, ok = _wrap(np.asarray(indices), data.shape[axis])
        if not ok.all():
            raise ValidationError(f"an index is out of range for axis {axis} of size {data.shape[axis]}")
        return [np.take_along_axis(data, idx, axis=axis)]


@register_op
class GatherND(Node):
    """Gather slices addressed by the last dim of the indices; leading ``batch_dims`` dims pair up."""

    type_name, version, num_inputs = "GatherND", "opset8", (2, 2)
    batch_dims = Attr("int", 0)

    def infer(self) -> list:
        check_index_type(self, 1, "indices")
        data, idx = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        et = self.get_input_element_type(0)
        rd, ri, b = rank_of(data), rank_of(idx), self.batch_dims
        if rd is None or ri is None or idx[ri - 1].is_dynamic:
            return [(et, PartialShape.dynamic())]
        m = idx[ri - 1].get_length()
        if b < 0 or b >= min(rd, ri):
            raise ValidationError(f"batch_dims {b} must be less than the ranks of data ({rd}) and indices ({ri})")
        if b + m > rd:
            raise ValidationError(f"indices address {m} dims after {b} batch dims, but data {data} has rank {rd}")
        out = list(idx)[:ri - 1] + list(data)[b + m:]
        for i in range(b):
            merged = data[i].merge(idx[i])
            out[i] = merged if merged is not None else Dimension()
        return [(et, PartialShape(out))]

    def evaluate(self, inputs: list) -> list:
        data, indices = inputs[0], np.asarray(inputs[1]).astype(np.int64)
        b, m = self.batch_dims, indices.shape[-1]
        nb = math.prod(data.shape[:b])
        d = data.reshape((nb,) + data.shape[b:])
        i = indices.reshape((nb, -1, m))
        tail = data.shape[b + m:]
        out = np.empty((nb, i.shape[1]) + tail, data.dtype)
        for k in range(nb):
            pos = i[k]
            pos = np.where(pos < 0, pos + np.array(d.shape[1:1 + m]), pos)
            if ((pos < 0) | (pos >= np.array(d.shape[1:1 + m]))).any():
                raise ValidationError(f"an index is out of range for data of shape {list(data.shape)}")
            out[k] = d[k][tuple(pos.T)]
        return [out.reshape(indices.shape[:-1] + tail)]


@register_op
class GatherNDV5(GatherND):
    """GatherND-5: as GatherND-8, but the batch dims of the output are flattened into one."""

    type_name, version = "GatherND", "opset5"

    def infer(self) -> list:
        ((et, ps),) = super().infer()
        b = self.batch_dims
        if b <= 1 or rank_of(ps) is None:
            return [(et, ps)]
        batch = list(ps)[:b]
        flat = Dimension(math.prod(d.get_length() for d in batch)) if all(d.is_static for d in batch) else Dimension()
        return [(et, PartialShape([flat] + list(ps)[b:]))]

    def evaluate(self, inputs: list) -> list:
        (out,) = super().evaluate(inputs)
        b = self.batch_dims
        return [out.reshape((-1,) + out.shape[b:]) if b > 1 else out]
