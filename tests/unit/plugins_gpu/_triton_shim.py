"""A NumPy stand-in for the part of Triton that vinerun's generated kernels use, so that their sources run on the
CPU in tests: ``@triton.jit`` kernels launched over a grid, one program at a time, on flat views of the tensors'
memory (pointer + offsets), with masked loads and stores.

>>> with triton_shim(monkeypatch): ...   # ``import triton`` now gives the shim  # doctest: +SKIP
"""

from __future__ import annotations

import math
import sys
import types
from typing import Any

import numpy as np
import torch

_state = {"pid": 0}


class Value(np.ndarray):
    """An array with Triton's ``.to(dtype)``."""

    def to(self, dtype: Any) -> Value:
        return np.asarray(self, dtype=np.dtype(dtype)).view(Value)


def _v(x: Any) -> Value:
    return np.asarray(x).view(Value)


class Pointer:
    """A tensor's memory as a flat array, plus offsets once something is added."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray | None = None):
        self.flat, self.offsets = flat, offsets

    def __add__(self, offsets: Any) -> Pointer:
        base = 0 if self.offsets is None else self.offsets
        return Pointer(self.flat, np.asarray(base + np.asarray(offsets), np.int64))

    __radd__ = __add__

    @property
    def dtype(self) -> Any:
        return types.SimpleNamespace(element_ty=self.flat.dtype)


def _memory(t: torch.Tensor) -> np.ndarray:
    """The tensor's memory from its first element to the end of its storage, flat, shared: what a pointer to it
    reaches (whatever its strides: dense, channels-last or broadcast)."""
    size = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
    return torch.as_strided(t, (size,), (1,), t.storage_offset()).numpy()


def load(ptr: Pointer, mask: Any = None, other: float = 0.0) -> Value:
    if ptr.offsets is None:
        return _v(ptr.flat[0])
    idx = np.broadcast_to(ptr.offsets, np.shape(ptr.offsets))
    ok = np.ones(idx.shape, bool) if mask is None else np.broadcast_to(mask, idx.shape)
    out = np.full(idx.shape, other, dtype=ptr.flat.dtype)
    out[ok] = ptr.flat[idx[ok]]
    return _v(out)


def store(ptr: Pointer, value: Any, mask: Any = None) -> None:
    idx = ptr.offsets
    value = np.broadcast_to(np.asarray(value), idx.shape)
    ok = np.ones(idx.shape, bool) if mask is None else np.broadcast_to(mask, idx.shape)
    ptr.flat[idx[ok]] = value[ok].astype(ptr.flat.dtype)


class _Kernel:
    def __init__(self, fn: Any):
        self.fn = fn

    def __getitem__(self, grid: tuple) -> Any:
        def launch(*args: Any, num_warps: int = 4, **constants: Any) -> None:
            ptrs = [Pointer(_memory(a)) if isinstance(a, torch.Tensor) else a for a in args]
            for pid in range(math.prod(grid)):
                _state["pid"] = pid
                self.fn(*ptrs, **constants)
        return launch


def _language() -> types.ModuleType:
    tl = types.ModuleType("triton.language")
    tl.float32, tl.int64 = np.float32, np.int64
    tl.constexpr = Any
    tl.program_id = lambda axis: _v(np.int64(_state["pid"]))
    tl.arange = lambda start, end: _v(np.arange(start, end, dtype=np.int64))
    tl.load, tl.store = load, store
    tl.maximum, tl.minimum = (lambda a, b: _v(np.maximum(a, b))), (lambda a, b: _v(np.minimum(a, b)))
    tl.where = lambda c, a, b: _v(np.where(c, a, b).astype(np.float32))
    tl.sigmoid = lambda x: _v(1 / (1 + np.exp(-np.asarray(x, np.float32))))
    tl.exp, tl.abs = (lambda x: _v(np.exp(x))), (lambda x: _v(np.abs(x)))
    tl.sqrt_rn = tl.sqrt = lambda x: _v(np.sqrt(x))
    tl.zeros = lambda shape, dtype: _v(np.zeros(shape, np.dtype(dtype)))
    tl.sum = lambda x, axis=0: _v(np.sum(x, axis=axis, dtype=np.float32))
    tl.math = types.SimpleNamespace(div_rn=lambda a, b: _v(np.asarray(a) / np.asarray(b)),
                                    erf=lambda x: _v(np.vectorize(math.erf)(x)))
    return tl


def modules() -> dict[str, types.ModuleType]:
    """The shim's modules by the names generated sources import."""
    triton = types.ModuleType("triton")
    triton.jit = _Kernel
    triton.next_power_of_2 = lambda n: 1 << max(int(n) - 1, 0).bit_length()
    tl = _language()
    extra = types.ModuleType("triton.language.extra")
    libdevice = types.ModuleType("triton.language.extra.libdevice")
    libdevice.tanh = lambda x: _v(np.tanh(x))
    libdevice.erf = lambda x: _v(np.vectorize(math.erf)(x).astype(np.float32))
    libdevice.log1p = lambda x: _v(np.log1p(x))
    extra.libdevice = libdevice
    tl.extra = extra
    triton.language = tl
    return {"triton": triton, "triton.language": tl, "triton.language.extra": extra,
            "triton.language.extra.libdevice": libdevice}


def install(monkeypatch: Any) -> None:
    """Make ``import triton`` (and its submodules) give the shim for the test."""
    for name, module in modules().items():
        monkeypatch.setitem(sys.modules, name, module)
