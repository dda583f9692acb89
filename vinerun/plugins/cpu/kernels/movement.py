"""Data-movement kernels on ATen where they beat NumPy: Gather, TopK and CumSum.

Gather of one constant scalar index is a view (:func:`.views.gather_scalar`). Pad by constant amounts
assigns into a filled array (constant mode) or gathers precomputed indices per axis (the other modes).

Each factory accepts only what the ATen call reproduces exactly (constant axes, torch-native
dtypes, in-range indices) and leaves the rest to the NumPy reference. Pad takes ATen's ``F.pad`` for reflect and
edge padding of up to the last 3 axes (NumPy's per-axis gather measured 12x slower) and for constant padding of
16K+ elements (multi-threaded; NumPy's fill and copy wins below that); f32/bf16 Concat and Transpose of static
shape run oneDNN, :mod:`.concat_dnnl` and :mod:`.transpose_dnnl`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.ops.topk_unique import sortable, stable_order
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._layout import strided_torch
from vinerun.plugins.cpu.kernels._torch import BF16, TORCH_DTYPES, strided_numpy, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv import torch_pad
from vinerun.plugins.cpu.kernels.views import gather_scalar

_TORCH_TYPES = {"f32", "f16", "bf16", "f64", "i8", "u8", "i16", "i32", "i64", "boolean"}


def _native(node: Node, *inputs: int) -> bool:
    return all(node.get_input_element_type(i).get_type_name() in _TORCH_TYPES for i in inputs)


def _const_int(node: Node, i: int) -> int | None:
    v = node.const_input(i)
    return None if v is None or np.size(v) != 1 else int(np.asarray(v).reshape(-1)[0])


def constant_tensor(a: np.ndarray) -> torch.Tensor:
    """A tensor over a constant's (read-only) memory without a copy where it is C-contiguous, else one copy.
    Only for kernels that never write to it: torch cannot mark a tensor read-only."""
    if not a.flags.c_contiguous:
        return to_torch(np.ascontiguousarray(a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "The given NumPy array is not writable"
        if a.dtype == BF16:
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)


#: at most this many output elements a Gather takes from NumPy (one call, no conversions)
_NUMPY_GATHER = 1 << 14


@cpu_kernel("Gather")
def gather(node: Node) -> Kernel | None:
    view = gather_scalar(node)
    if view is not None:
        return view
    axis = _const_int(node, 2)
    if axis is None or node.batch_dims != 0 or not _native(node, 0):
        return None
    reference = node.evaluate
    table = node.const_input(0)
    # a constant table (an embedding) as a tensor once: to_torch would copy the read-only array on every call
    table_t = constant_tensor(table) if table is not None and table.dtype in TORCH_DTYPES else None

    def run(inputs):
        data, indices = inputs[0], np.asarray(inputs[1])
        if data.dtype not in TORCH_DTYPES:
            return reference(inputs)
        ax = axis + data.ndim if axis < 0 else axis
        if 0 <= ax < data.ndim and indices.size * (data.size // max(data.shape[ax], 1)) <= _NUMPY_GATHER:
            try:  # a few rows: NumPy's take (2 us) before ATen's conversions and checks (~15 us)
                return [np.take(data, indices, axis=ax)]
            except IndexError:
                return reference(inputs)  # out-of-range indices read as zeros there
        size = data.shape[ax]
        idx = torch.from_numpy(indices.astype(np.int64, copy=True).reshape(-1))
        idx = torch.where(idx < 0, idx + size, idx)
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= size):
            return reference(inputs)  # out-of-range indices read as zeros there
        source = table_t if table_t is not None else to_torch(data)  # input 0 is that constant
        out = torch.index_select(source, ax, idx)
        shape = data.shape[:ax] + indices.shape + data.shape[ax + 1:]
        return [to_numpy(out.reshape(shape))]

    return Kernel(run, "aten_index_select")


#: element types torch.topk orders as the reference does (bf16 and f16 exactly as their f32 widening)
_TOPK_TYPES = {"f32", "f64", "f16", "bf16", "i8", "u8", "i16", "i32", "i64"}


@cpu_kernel("TopK")
def top_k(node: Node) -> Kernel | None:
    """torch.topk with the reference's order: ties by the lower index, NaN the largest; ``k`` read per call where
    it is computed (``min(k, count)`` as detection heads write it), ``sort="index"`` by position."""
    if node.get_input_element_type(0).get_type_name() not in _TOPK_TYPES:
        return None
    fixed_k = _const_int(node, 1)
    largest, by_position = node.mode == "max", node.sort == "index"
    index_dtype, axis, reference = node.index_element_type.to_dtype(), node.axis, node.evaluate

    def run(inputs):
        x = inputs[0]
        k = fixed_k if fixed_k is not None else int(np.asarray(inputs[1]).reshape(-1)[0])
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim or k < 0 or x.dtype not in TORCH_DTYPES:
            return reference(inputs)  # its errors, and its empty result for a negative k
        ax = axis % x.ndim
        values, indices = _top_k_lowest_index_first(x, min(k, x.shape[ax]), ax, largest)
        if by_position:
            by_index = np.argsort(indices, axis=ax, kind="stable")
            values, indices = np.take_along_axis(values, by_index, ax), np.take_along_axis(indices, by_index, ax)
        return [np.ascontiguousarray(values), indices.astype(index_dtype)]

    return Kernel(run, "aten_topk")


def _top_k_lowest_index_first(x: np.ndarray, k: int, ax: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """torch.topk, with ties broken by the lower index as ONNX requires (int64 indices).

    Distinct values (continuous scores) need nothing more. With equal values among the k, or the k-th value also
    outside them (which of those torch keeps is unspecified; one value more than asked tells), the selection is
    rebuilt: the values better than the k-th, then the first of those equal to it by position, ordered by a
    stable sort. A NaN among the k (the largest, for torch and the reference alike) takes a stable full sort.
    """
    n = x.shape[ax]
    if k == 0:
        empty = np.take(x, np.arange(0), axis=ax)
        return empty, np.zeros(empty.shape, np.int64)
    t = to_torch(x)
    values, indices = torch.topk(t, min(k + 1, n), dim=ax, largest=largest, sorted=True)
    v = (values.float() if values.dtype == torch.bfloat16 else values).numpy()
    v = v if ax == v.ndim - 1 else np.moveaxis(v, ax, -1)
    # strictly ordered: no ties, no NaN (its comparisons are false); one NumPy pass where the checks below take
    # three (90 TopKs of a detection head's per-class loop: ~5 us each)
    ordered = np.less if largest else np.greater
    if ordered(v[..., 1:], v[..., :-1]).all():
        if ax == v.ndim - 1 and values.dtype != torch.bfloat16:  # NumPy's slices: ~0.1 us, torch's narrow ~1.4
            return values.numpy()[..., :k], indices.numpy()[..., :k]
        return to_numpy(values.narrow(ax, 0, k).contiguous()), indices.narrow(ax, 0, k).numpy()
    if not (v[..., 1:] == v[..., :-1]).any():  # no ties (and no NaN pairs: NaN != NaN)
        if v.dtype.kind != "f" or not np.isnan(v[..., :k]).any():
            return to_numpy(values.narrow(ax, 0, k).contiguous()), indices.narrow(ax, 0, k).numpy()
    elif v.dtype.kind != "f" or not np.isnan(v[..., :k]).any():
        return _rebuilt_with_ties(x, v[..., k - 1:k], k, ax, largest)
    values, indices = torch.sort(t, dim=ax, descending=largest, stable=True)
    return to_numpy(values.narrow(ax, 0, k).contiguous()), indices.narrow(ax, 0, k).contiguous().numpy()


def _rebuilt_with_ties(x: np.ndarray, kth: np.ndarray, k: int, ax: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` along ``ax`` given each row's k-th value (``kth``, the rows on the last axis): every value
    better than it, then the lowest positions holding it, in the reference's order."""
    last = ax == x.ndim - 1
    rows = x if last else np.moveaxis(x, ax, -1)
    key = sortable(rows)
    better = key > kth if largest else key < kth
    equal = key == kth
    if rows.ndim == 1:  # one row: the better ones in order, then the first equal ones
        ahead = np.flatnonzero(better)
        lead = key[ahead]  # by value, ties (in index order already) kept: floats negate exactly, NaN is not here
        ahead = ahead[np.argsort(-lead if largest else lead, kind="stable") if lead.dtype.kind == "f"
                      else stable_order(lead, 0, largest)]
        positions = np.concatenate([ahead, np.flatnonzero(equal)[:k - ahead.size]])
        return rows[positions], positions
    need = k - np.count_nonzero(better, axis=-1, keepdims=True)
    chosen = better | (equal & (np.cumsum(equal, axis=-1) <= need))  # k per row, NaN never chosen
    positions = np.nonzero(chosen.reshape(-1, rows.shape[-1]))[1].reshape(rows.shape[:-1] + (k,))
    values = np.take_along_axis(rows, positions, axis=-1)
    order = stable_order(values, values.ndim - 1, largest)
    values, positions = np.take_along_axis(values, order, axis=-1), np.take_along_axis(positions, order, axis=-1)
    return (values, positions) if last else (np.moveaxis(values, -1, ax), np.moveaxis(positions, -1, ax))


@cpu_kernel("CumSum")
def cum_sum(node: Node) -> Kernel | None:
    axis = _const_int(node, 1) if node.get_input_size() > 1 else 0
    if axis is None or node.get_input_element_type(0).get_type_name() not in {"f32", "f64", "i32", "i64"}:
        return None
    exclusive, reverse = node.exclusive, node.reverse

    def run(inputs):
        x = to_torch(inputs[0])
        ax = axis + x.dim() if axis < 0 else axis
        if reverse:
            x = x.flip(ax)
        out = torch.cumsum(x, dim=ax, dtype=x.dtype)
        if exclusive and out.shape[ax]:
            shifted = out.narrow(ax, 0, out.shape[ax] - 1)
            out = torch.cat([torch.zeros_like(out.narrow(ax, 0, 1)), shifted], dim=ax)
        if reverse:
            out = out.flip(ax)
        return [to_numpy(out.contiguous())]

    return Kernel(run, "aten_cumsum")


#: from this many input elements ATen's multi-threaded constant pad beats NumPy's fill and copy (below it,
#: ATen's call overhead loses: 2 us against 4.5 at 1K elements, 37 against 19 at 200K, on 2 cores)
_ATEN_PAD_MIN = 1 << 14
#: OpenVINO's pad modes ATen has (``symmetric`` has no ATen twin); ATen pads at most the last 3 axes
_ATEN_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate"}
_ATEN_FLOAT_MODES = {"reflect", "replicate"}  # ATen's reflection/replication kernels take floats only


def _aten_pad(node: Node, begin: list[int], end: list[int], axes: list[int]) -> Callable | None:
    """``(x, pad_value) -> padded`` through ``F.pad`` for what ATen reproduces exactly, else None."""
    mode = _ATEN_MODES.get(node.pad_mode)  # type: ignore[attr-defined]
    et = node.get_input_element_type(0).get_type_name()
    rank = len(begin)
    if mode is None or et not in _TORCH_TYPES or et == "boolean" or not axes:
        return None
    first = min(axes)  # F.pad lists pads from the last axis back to the first padded one
    if mode in _ATEN_FLOAT_MODES and (et not in ("f32", "f64", "bf16", "f16") or rank - first > 3
                                      or rank > 5 or first == 0):
        return None  # reflect/replicate: 1-3 trailing axes of a batched (and channelled) tensor
    pads = torch_pad(begin[first:], end[first:])

    def run(x: np.ndarray, value: np.ndarray | None) -> np.ndarray:
        t = strided_torch(x)
        if mode == "constant":
            fill = 0 if value is None else np.asarray(value).reshape(()).item()
            return strided_numpy(F.pad(t, pads, mode="constant", value=fill))
        return strided_numpy(F.pad(t, pads, mode=mode))

    return run


@cpu_kernel("Pad")
def pad(node: Node) -> Kernel | None:
    """Pad by constant, non-negative amounts: faster than ``np.pad``'s generic path on small arrays."""
    begin, end = node.const_input(1), node.const_input(2)
    if begin is None or end is None or node.pad_mode not in ("constant", "reflect", "symmetric", "edge"):
        return None
    b = [int(v) for v in np.asarray(begin).reshape(-1)]
    e = [int(v) for v in np.asarray(end).reshape(-1)]
    if len(b) != len(e) or min(b + e, default=0) < 0:
        return None
    mode, reference = node.pad_mode, node.evaluate
    axes = [i for i, (lo, hi) in enumerate(zip(b, e, strict=True)) if lo or hi]
    indices: dict[tuple[int, int], np.ndarray] = {}  # (axis, size) -> source index per output position
    aten = _aten_pad(node, b, e, axes)
    shape = node.get_input_partial_shape(0)
    if aten is not None and mode == "constant" and shape.is_static and math.prod(shape.to_shape()) < _ATEN_PAD_MIN:
        aten = None

    def run(inputs: list) -> list:
        x = inputs[0]
        if x.ndim != len(b) or (mode != "constant" and not all(x.shape[a] > max(b[a], e[a]) for a in axes)):
            return reference(inputs)  # the reference's error (or its rules for the edge cases)
        if aten is not None and (mode != "constant" or x.size >= _ATEN_PAD_MIN):  # (a dynamic shape's size)
            return [aten(x, inputs[3] if len(inputs) > 3 else None)]
        if mode == "constant":
            value = 0 if len(inputs) < 4 or inputs[3] is None else np.asarray(inputs[3]).reshape(())
            out = np.full([d + lo + hi for d, lo, hi in zip(x.shape, b, e, strict=True)], value, x.dtype)
            out[tuple(slice(lo, lo + d) for d, lo in zip(x.shape, b, strict=True))] = x
            return [out]
        for a in axes:
            key = (a, x.shape[a])
            idx = indices.get(key)
            if idx is None:
                idx = indices[key] = np.pad(np.arange(x.shape[a]), (b[a], e[a]), mode=mode)
            x = np.take(x, idx, axis=a)
        return [x]

    return Kernel(run, "aten_pad" if aten is not None else "numpy_pad")
