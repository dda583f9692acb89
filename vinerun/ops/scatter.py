"""Scatter family: ScatterUpdate (opset3), ScatterElementsUpdate (opset12), ScatterNDUpdate (opset3,
opset15) and the ONNX-only TensorScatter (KV-cache writes)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._base import normalize_axis, without_attrs
from vinerun.ops._shape_helpers import check_index_type, rank_of

_UFUNCS = {"sum": np.add, "sub": np.subtract, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def _identity(reduction: str, dtype: np.dtype) -> np.ndarray:
    """The neutral start value of a reduction for positions written without their initial value."""
    if reduction in ("sum", "sub", "mean"):
        return np.zeros((), dtype)
    if reduction == "prod":
        return np.ones((), dtype)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype) if dtype.kind in "iu" else None
    if reduction == "min":
        return np.array(True if dtype.kind == "b" else info.max, dtype)  # type: ignore[union-attr]
    return np.array(False if dtype.kind == "b" else info.min, dtype)  # type: ignore[union-attr]


def scatter_reduce(out: np.ndarray, where: tuple, updates: np.ndarray, reduction: str,
                   use_init_val: bool = True) -> np.ndarray:
    """Write ``updates`` into ``out[where]`` in place, combining duplicates with ``reduction``."""
    if reduction == "none":
        out[where] = updates
        return out
    if not use_init_val:
        out[where] = _identity(reduction, out.dtype)
    if reduction == "mean":
        total = out.astype(np.float64)
        count = np.zeros(out.shape, np.int64)
        if use_init_val:
            count[where] = 1
        np.add.at(total, where, updates)
        np.add.at(count, where, 1)
        mean = total / np.maximum(count, 1)
        touched = np.zeros(out.shape, bool)
        touched[where] = True
        if out.dtype.kind in "iu":
            mean = np.floor(mean)
        out[touched] = mean[touched].astype(out.dtype)
        return out
    fn = _UFUNCS.get(reduction)
    if fn is None:
        raise ValidationError(f"unknown reduction '{reduction}'")
    fn.at(out, where, updates.astype(out.dtype, copy=False))
    return out


def axis_and_indices(node: Node, data: np.ndarray, indices: np.ndarray, axis: np.ndarray) -> tuple[int, np.ndarray]:
    """The normalized axis (a 1-element input) and the indices along it, negatives wrapped and range-checked."""
    ax = normalize_axis(int(np.asarray(axis).reshape(-1)[0]), data.ndim, node)
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + data.shape[ax], idx)
    if ((idx < 0) | (idx >= data.shape[ax])).any():
        raise ValidationError(f"an index is out of range for axis {ax} of size {data.shape[ax]}")
    return ax, idx


def _same_as_data(node: Node) -> list:
    return [(node.get_input_element_type(0), node.get_input_partial_shape(0))]


@register_op
class ScatterUpdate(Node):
    """Overwrite whole slices of input 0 along the axis (input 3) at the indices (input 1)."""

    type_name, version, num_inputs = "ScatterUpdate", "opset3", (4, 4)

    def infer(self) -> list:
        check_index_type(self, 1, "indices")
        return _same_as_data(self)

    def evaluate(self, inputs: list) -> list:
        data, indices, updates, axis = inputs
        axis, idx = axis_and_indices(self, data, indices, axis)
        out = np.moveaxis(data.copy(), axis, 0)
        upd = np.moveaxis(updates, list(range(axis, axis + idx.ndim)), list(range(idx.ndim)))
        out[idx] = upd
        return [np.array(np.moveaxis(out, 0, axis), order="C")]


@register_op
class ScatterElementsUpdate(Node):
    """Write each update at data position ``indices`` along ``axis`` (input 3), with an optional reduction."""

    type_name, version, num_inputs = "ScatterElementsUpdate", "opset12", (4, 4)
    reduction = Attr("str", "none")
    use_init_val = Attr("bool", True)

    def infer(self) -> list:
        check_index_type(self, 1, "indices")
        if self.reduction not in ("none", "sum", "prod", "min", "max", "mean"):
            raise ValidationError(f"unknown reduction '{self.reduction}'")
        ri, ru = rank_of(self.get_input_partial_shape(1)), rank_of(self.get_input_partial_shape(2))
        if ri is not None and ru is not None and ri != ru:
            raise ValidationError("indices and updates must have the same rank")
        return _same_as_data(self)

    def evaluate(self, inputs: list) -> list:
        data, indices, updates, axis = inputs
        axis, idx = axis_and_indices(self, data, indices, axis)
        where = list(np.indices(idx.shape, sparse=True))
        where[axis] = idx
        out = scatter_reduce(data.copy(), tuple(where), np.asarray(updates)[tuple(slice(n) for n in idx.shape)],
                             self.reduction, self.use_init_val)
        return [out]


@register_op
@without_attrs("reduction", "use_init_val")
class ScatterElementsUpdateV3(ScatterElementsUpdate):
    """ScatterElementsUpdate-3: no reduction."""

    type_name, version = "ScatterElementsUpdate", "opset3"


@register_op
class ScatterNDUpdate(Node):
    """Write slices of updates at the positions addressed by the last dim of the indices."""

    type_name, version, num_inputs = "ScatterNDUpdate", "opset15", (3, 3)
    reduction = Attr("str", "none")

    def infer(self) -> list:
        check_index_type(self, 1, "indices")
        if self.reduction not in ("none", "sum", "sub", "prod", "min", "max"):
            raise ValidationError(f"unknown reduction '{self.reduction}'")
        return _same_as_data(self)

    def evaluate(self, inputs: list) -> list:
        data, indices, updates = inputs
        idx = np.asarray(indices).astype(np.int64)
        m = idx.shape[-1]
        if m > data.ndim:
            raise ValidationError(f"indices address {m} dims, but data has rank {data.ndim}")
        sizes = np.array(data.shape[:m], np.int64)
        idx = np.where(idx < 0, idx + sizes, idx)
        if ((idx < 0) | (idx >= sizes)).any():
            raise ValidationError(f"an index is out of range for data of shape {list(data.shape)}")
        where = tuple(idx[..., j] for j in range(m))
        return [scatter_reduce(data.copy(), where, np.asarray(updates), self.reduction)]


@register_op
@without_attrs("reduction")
class ScatterNDUpdateV3(ScatterNDUpdate):
    """ScatterNDUpdate-3: no reduction."""

    type_name, version = "ScatterNDUpdate", "opset3"


@register_op
class TensorScatter(Node):
    """ONNX TensorScatter: write ``update`` into the cache along ``axis`` from each batch's write index."""

    type_name, version, num_inputs = "TensorScatter", "onnx", (2, 3)
    axis = Attr("int", -2)
    mode = Attr("str", "linear")

    def infer(self) -> list:
        if self.mode not in ("linear", "circular"):
            raise ValidationError(f"mode must be 'linear' or 'circular', got '{self.mode}'")
        r = rank_of(self.get_input_partial_shape(0))
        if r is not None:
            if normalize_axis(self.axis, r, self) == 0:
                raise ValidationError("axis cannot be the batch axis 0")
        return _same_as_data(self)

    def evaluate(self, inputs: list) -> list:
        cache, update = inputs[0], inputs[1]
        axis = normalize_axis(self.axis, cache.ndim, self)
        batch, max_len, seq = cache.shape[0], cache.shape[axis], update.shape[axis]
        starts = (np.zeros(batch, np.int64) if len(inputs) < 3 or inputs[2] is None
                  else np.asarray(inputs[2]).astype(np.int64).reshape(-1))
        out = cache.copy()
        for b in range(batch):
            pos = starts[b] + np.arange(seq)
            if self.mode == "circular":
                pos = pos % max_len
            elif seq and (pos[-1] >= max_len or pos[0] < 0):
                raise ValidationError(f"writing {seq} entries at index {starts[b]} overruns the cache "
                                      f"length {max_len}")
            dst = np.moveaxis(out[b], axis - 1, 0)
            dst[pos] = np.moveaxis(update[b], axis - 1, 0)
        return [out]

