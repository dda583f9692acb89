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


@cpu_kernel("TopK")
def top_k(node: Node) -> Kernel | None:
    k = _const_int(node, 1)
    kinds = {"f32", "f64", "i32", "i64"}
    if k is None or node.sort == "index" or node.get_input_element_type(0).get_type_name() not in kinds:
        return None
    largest = node.mode == "max"
    index_dtype = node.index_element_type.to_dtype()
    axis = node.axis

    def run(inputs):
        x = to_torch(inputs[0])
        ax = axis + x.dim() if axis < 0 else axis
        kk = min(k, x.shape[ax])
        values, indices = _top_k_lowest_index_first(x, kk, ax, largest)
        return [to_numpy(values.contiguous()), to_numpy(indices.contiguous()).astype(index_dtype)]

    return Kernel(run, "aten_topk")


def _top_k_lowest_index_first(x: torch.Tensor, k: int, ax: int, largest: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.topk, with ties broken by the lower index as ONNX requires.

    Equal values inside the selection are reordered by index; when the k-th value also occurs outside
    the selection (which of them is kept is unspecified in torch), a stable full sort decides.
    """
    if k == 0:
        return x.narrow(ax, 0, 0), torch.zeros_like(x.narrow(ax, 0, 0), dtype=torch.int64)
    values, indices = torch.topk(x, k, dim=ax, largest=largest, sorted=True)
    kth = values.narrow(ax, k - 1, 1)
    if not torch.equal((x == kth).sum(ax), (values == kth).sum(ax)):
        values, indices = torch.sort(x, dim=ax, descending=largest, stable=True)
        return values.narrow(ax, 0, k), indices.narrow(ax, 0, k)
    indices, by_index = torch.sort(indices, dim=ax)
    values, order = torch.sort(torch.gather(values, ax, by_index), dim=ax, descending=largest, stable=True)
    return values, torch.gather(indices, ax, order)


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
