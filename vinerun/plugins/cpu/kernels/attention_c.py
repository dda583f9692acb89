"""f32 FusedAttention as one C kernel (``csrc/attention.c``): ``softmax(q k^T * scale + mask) v`` block by block
of query rows, scores kept in cache, heads read and written through strides (a ``[B, S, H*D]`` input, a
VariadicSplit's part, a merged ``[B, S, H*Dv]`` output: no copies), and a native step, so a transformer layer
stays one segment.

Why not oneDNN's three primitives (:mod:`.attention_dnnl`): their [B, H, Sq, Sk] scores make a round trip
through memory between them, and the node runs from Python between two segments (a fresh score array per call:
page faults). Measured on BERT 6x384 (12 heads of 32, 128 tokens), 1 thread, a layer's attention: f32 ~540 us
there, 388 us here; bf16 ~360 -> 263 us (AVX512-BF16 dot products); the network f32 31.1 -> 28.4 ms.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.device_info import cpu_flags
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._ckernel import Api, CKernel, amx_ready, available
from vinerun.plugins.cpu.kernels._dnnl import ARG_DST, ARG_SRC, PrimitiveCache, data_address, library
from vinerun.plugins.cpu.kernels._native import Buffer, NativeStep, ValueLayout, arriving_layout, dense_value
from vinerun.plugins.cpu.kernels._torch import BF16

#: input layout combinations a node makes kernels for (each a parameter block); others run the fallback
LAYOUTS = 4
#: element types of q, k, v and the output (bf16 needs AVX512-BF16), and of the mask (dtypes: a set lookup, where
#: ``dtype.name`` takes ~1.6 us)
TYPES = frozenset((np.dtype(np.float32), BF16))
__all__ = ["Attention", "available", "c_attention_kernel"]


class _Params(ctypes.Structure):
    """``attention`` of csrc/attention.c."""

    _fields_ = [("api", Api), ("batch", ctypes.c_int64), ("heads", ctypes.c_int64), ("sq", ctypes.c_int64),
                ("sk", ctypes.c_int64), ("d", ctypes.c_int64), ("dv", ctypes.c_int64),
                *[(name, ctypes.c_int64 * 3) for name in ("q", "k", "v", "out", "mask")],
                ("has_mask", ctypes.c_int64), ("bf16", ctypes.c_int64), ("mask_bf16", ctypes.c_int64),
                ("zero_nan_rows", ctypes.c_int64), ("amx", ctypes.c_int64), ("scale", ctypes.c_float)]


def head_strides(layout: ValueLayout, heads: int, split: bool) -> tuple[tuple[int, ...], tuple[int, int, int]] | None:
    """([B, H, S, D], element strides of B, H, S) of an input: a split ``[B, S, H*D]`` read as heads by its
    strides, else ``[B, H, S, D]`` as it is; None where the last axis is not contiguous f32 or bf16."""
    shape, strides, dtype = layout
    size = dtype.itemsize
    if (dtype not in TYPES or not shape or (strides[-1] != size and shape[-1] > 1) or min(strides) < 0
            or any(s % size for s in strides)):
        return None
    el = [s // size for s in strides]
    if split:
        if len(shape) != 3 or shape[2] % heads:
            return None
        b, s, e = shape
        return (b, heads, s, e // heads), (el[0], e // heads, el[1])
    if len(shape) != 4:
        return None
    return tuple(shape), (el[0], el[1], el[2])


def mask_strides(layout: ValueLayout, dims: tuple[int, int, int, int]) -> tuple[int, int, int] | None:
    """Element strides of B, H and the query rows of an additive f32 or bf16 mask broadcast to ``dims``
    [B, H, Sq, Sk] (0 along a broadcast axis), or None (another type, a key axis that is not contiguous, a shape
    that does not broadcast)."""
    shape, strides, dtype = layout
    size = dtype.itemsize
    if dtype not in TYPES or len(shape) > 4 or min(strides, default=0) < 0 or any(s % size for s in strides):
        return None
    shape = (1,) * (4 - len(shape)) + tuple(shape)
    strides = (0,) * (4 - len(strides)) + tuple(strides)
    if any(s not in (1, d) for s, d in zip(shape, dims, strict=True)) or shape[3] != dims[3]:
        return None
    if shape[3] > 1 and strides[3] != size:
        return None
    return tuple(0 if shape[i] == 1 else strides[i] // size for i in range(3))  # type: ignore[return-value]


class Attention(CKernel):
    """The attention of one node for one combination of input layouts (q, k, v, optional mask); keys are thread
    counts; a call passes ``(q, k, v, out[, mask])`` addresses."""

    entry = "attention"

    def __init__(self, layouts: tuple[ValueLayout, ...], heads: int, split: str, scale: float, merge: bool,
                 zero_nan_rows: bool = False):
        super().__init__(library())  # type: ignore[arg-type] - callers check library() first
        self.out_shape, self.params = attention_params(layouts, heads, split, scale, merge, zero_nan_rows)
        self.dtype = layouts[0][2]
        self.n_buffers = len(layouts) + 1
        self.any_md = self.md((1,), (1,))  # the kernel reads its buffers' addresses only

    def run_as(self, params: tuple, threads: int, *addresses: int) -> None:
        """Run with the parameter block of other layouts (``attention_params``; same types, same mask or none):
        the calling thread's block is rewritten where it differs, so a growing KV cache runs here without a new
        kernel per length (one costs ~0.5 ms to make and bind). The block is this thread's own, apart from the one
        that calls of the kernel's own layouts use."""
        key = (threading.get_ident(), ("run_as", threads))
        run = self._calls.get(key)
        if run is None:
            run = self._calls[key] = self.bound(threads)
        block = run.binding.keep[0]  # type: ignore[attr-defined] - this thread's, read by the kernel per call
        if getattr(run, "params", self.params) != params:
            _write(block, params)
            run.params = params  # type: ignore[attr-defined]
        run(*addresses)

    def _runtime(self, key: Any) -> list[tuple[int, ctypes.c_void_p]]:
        return [(ARG_SRC, self.any_md)] * 3 + [(ARG_DST, self.any_md)] + [(ARG_SRC, self.any_md)] * (
            self.n_buffers - 4)

    def _params(self, key: Any) -> tuple[ctypes.Structure, Any]:
        block = _Params(Api.of(self.lib))
        _write(block, self.params)
        return block, None


def attention_params(layouts: tuple[ValueLayout, ...], heads: int, split: str, scale: float, merge: bool,
                     zero_nan_rows: bool = False) -> tuple[tuple[int, ...], tuple]:
    """(output shape, the values of the kernel's parameter block) for these input layouts (q, k, v, optional
    mask); ValueError where the kernel does not read them. ``zero_nan_rows``: rows whose softmax is NaN (every key
    masked out) give zeros."""
    parts = [head_strides(lay, heads, name in split) for lay, name in zip(layouts[:3], "qkv", strict=True)]
    if any(p is None for p in parts):
        raise ValueError("attention: an input layout the kernel does not read")
    (q, qs), (k, ks), (v, vs) = parts  # type: ignore[misc]
    dtype = layouts[0][2]
    if any(lay[2] != dtype for lay in layouts[:3]):
        raise ValueError("attention: q, k and v of different types")
    b, h, sq, d = q
    sk, dv = k[2], v[3]
    if k[:2] != (b, h) or v[:3] != (b, h, sk) or k[3] != d:
        raise ValueError(f"attention: q {q}, k {k} and v {v} do not match")
    out = (sq * h * dv, dv, h * dv) if merge else (h * sq * dv, sq * dv, dv)
    ms = (0, 0, 0)
    if len(layouts) > 3:
        found = mask_strides(layouts[3], (b, h, sq, sk))
        if found is None:
            raise ValueError(f"attention: a mask of layout {layouts[3]} does not broadcast to the scores")
        ms = found
    mask_bf16 = len(layouts) > 3 and layouts[3][2] == BF16
    params = (b, h, sq, sk, d, dv, qs, ks, vs, out, ms, int(len(layouts) > 3), int(dtype == BF16),
              int(mask_bf16), int(zero_nan_rows), int(dtype == BF16 and amx_ready()), scale)
    return ((b, sq, h * dv) if merge else (b, h, sq, dv)), params


#: parameter blocks of layouts past the kernels made, shared by the nodes (a decoder's layers all see the same
#: cache length in a step: one computes them, ~7-15 us)
_RETARGETED: dict[tuple, tuple[tuple[int, ...], tuple]] = {}
_FIELDS = [name for name, _ in _Params._fields_[1:]]  # all but the api table, in attention_params' order


def _write(block: _Params, params: tuple) -> None:
    for name, value in zip(_FIELDS, params, strict=True):
        if isinstance(value, tuple):
            getattr(block, name)[:] = value
        else:
            setattr(block, name, value)


def _addresses(arrays: list[np.ndarray], out: np.ndarray) -> list[int]:
    """The kernel's buffer order: q, k, v, the output, then the mask."""
    return [data_address(a) for a in arrays[:3]] + [data_address(out)] + [data_address(a) for a in arrays[3:]]


def _layout(a: np.ndarray) -> ValueLayout:
    return a.shape, a.strides, a.dtype


def c_attention_kernel(node: Node, fallback: Callable[[list], list]) -> Kernel | None:
    """The kernel of an f32 FusedAttention, or a bf16 one on a CPU with AVX512-BF16 (an f32 or bf16 mask, or
    none); None where the C kernels are not built. With the node's ``zero_masked_rows`` the kernel gives zeros
    for rows whose softmax is NaN (``fallback`` must do the same)."""
    n_in = node.get_input_size()
    types = {node.get_input_element_type(i).get_type_name() for i in range(3)}
    mask_ok = n_in < 4 or node.get_input_element_type(3).get_type_name() in ("f32", "bf16")
    if library() is None or not available() or not mask_ok or not (
            types == {"f32"} or types == {"bf16"} and "avx512_bf16" in cpu_flags()):
        return None
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    heads, split, scale, merge = node.heads, node.split, float(node.scale), node.merge  # type: ignore[attr-defined]
    zero_nan = bool(node.zero_masked_rows)  # type: ignore[attr-defined]

    made: list[Attention] = []  # the first kernel made: it runs the layouts past LAYOUTS (see run_as)

    def make(layouts: tuple[ValueLayout, ...]) -> Attention | None:
        try:
            op = Attention(layouts, heads, split, scale, merge, zero_nan)
        except ValueError:
            return None
        made[:1] = made[:1] or [op]
        return op

    kernels = PrimitiveCache(make, LAYOUTS)

    def run(inputs: list) -> list:
        arrays = [a for a in inputs if a is not None]
        if not all(type(a) is np.ndarray for a in arrays):
            return fallback(inputs)
        layouts = tuple(_layout(a) for a in arrays)
        op = kernels.get(layouts)
        if op is not None:
            y = np.empty(op.out_shape, op.dtype)
            op(torch.get_num_threads(), *_addresses(arrays, y))
            return [y]
        # a dynamic model's ever-new shapes (a KV cache one longer per call): the first kernel, re-parameterized
        if not made or made[0].n_buffers != len(arrays) + 1:
            return fallback(inputs)
        key = (layouts, heads, split, scale, merge, zero_nan)
        found = _RETARGETED.get(key)
        if found is None:
            try:
                found = attention_params(layouts, heads, split, scale, merge, zero_nan)
            except ValueError:
                return fallback(inputs)
            if len(_RETARGETED) >= 64:
                _RETARGETED.clear()
            _RETARGETED[key] = found
        out_shape, params = found
        y = np.empty(out_shape, layouts[0][2])
        made[0].run_as(params, torch.get_num_threads(), *_addresses(arrays, y))
        return [y]

    # select_kernel appends "_bf16" for a bf16 node; profiles name the tile unit where the products run on it
    kernel = Kernel(run, "blocked_attention", impl="amx" if dtype == BF16 and amx_ready() else "")
    shapes = [node.get_input_partial_shape(i) for i in range(n_in)]
    if all(s.is_static for s in shapes):
        static = [tuple(int(d) for d in s.to_shape()) for s in shapes]

        def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
            ins = tuple(lay or arriving_layout(node, i, static[i], np.dtype(node.get_input_element_type(i).to_dtype()))
                        for i, lay in enumerate(layouts))
            op = kernels.get(ins)
            if op is None:
                return None
            out = dense_value(op.out_shape, dtype)
            buffers = [Buffer(False, 0, ins[0]), Buffer(False, 1, ins[1]), Buffer(False, 2, ins[2]),
                       Buffer(True, 0, out), *(Buffer(False, 3, ins[3]) for _ in ins[3:])]
            return NativeStep(op, lambda threads: threads, buffers)

        kernel.native = native
    return kernel
