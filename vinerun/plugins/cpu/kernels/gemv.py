"""Matrix-vector product with constant f32 weights (a classifier at batch 1): ``y = act(x @ W + bias)``.

With one row, the product is a read of the weights, from memory (the layers before evicted them). The C kernel
(``csrc/gemv.c``) reads W packed once into column panels laid end to end: one sequential stream, which the
hardware prefetcher serves at close to a plain read's speed. Measured on a 2-core AVX-512 CPU, 1 thread, cache
evicted before each call: 1280 -> 1000 (MobileNetV2's classifier) oneDNN 414 us, this 238 us, a plain read of
the 5 MB 225 us; 2048 -> 1000 (ResNet-50's) 617 -> 328 us; at 2 threads 309 -> 225 and 406 -> 303 us.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from vinerun.plugins.cpu.kernels._ckernel import Activation, Api, CKernel, activation, available
from vinerun.plugins.cpu.kernels._dnnl import Library

PANEL = 64  # output columns per panel (csrc/gemv.c)
__all__ = ["Gemv", "available", "pack", "takes"]


class _Params(ctypes.Structure):
    """``gemv`` of csrc/gemv.c."""

    _fields_ = [("api", Api), ("k", ctypes.c_int64), ("n", ctypes.c_int64), ("panels", ctypes.c_void_p),
                ("bias", ctypes.c_void_p), ("act", Activation)]


def pack(w: np.ndarray) -> np.ndarray:
    """``w`` [k, n] as ceil(n / PANEL) panels of [k, PANEL] one after another (columns past n zero)."""
    k, n = w.shape
    panels = -(-n // PANEL)
    padded = np.zeros((k, panels * PANEL), np.float32)
    padded[:, :n] = w
    return np.ascontiguousarray(padded.reshape(k, panels, PANEL).transpose(1, 0, 2))


def takes(post_ops: list[tuple]) -> bool:
    """Whether the kernel's epilogue runs ``post_ops`` (at most one ReLU or clip)."""
    return len(post_ops) <= 1 and activation(post_ops[0] if post_ops else None) is not None


class Gemv(CKernel):
    """``y[1, n] = act(x[1, k] @ w + bias)`` for constant f32 ``w`` [k, n]; keys are thread counts (the panels are
    split over the calling thread's OpenMP team); a call passes ``(x, y)`` addresses."""

    entry = "gemv"

    def __init__(self, lib: Library, w: np.ndarray, bias: np.ndarray | None, post_ops: list[tuple]):
        super().__init__(lib)
        if not takes(post_ops):
            raise ValueError(f"matrix-vector product: no epilogue for the post-ops {post_ops}")
        k, n = w.shape
        self.k, self.n = k, n
        self.panels = pack(np.asarray(w, np.float32))
        self.bias = np.zeros(n, np.float32) if bias is None else np.ascontiguousarray(
            np.broadcast_to(np.asarray(bias, np.float32).reshape(-1), (n,)))
        self.act = activation(post_ops[0] if post_ops else None)
        self.src_md = self.md((1, k), (k, 1))
        self.dst_md = self.md((1, n), (n, 1))

    def _params(self, key: int) -> tuple[ctypes.Structure, Any]:
        del key
        return _Params(Api.of(self.lib), self.k, self.n, self.panels.ctypes.data, self.bias.ctypes.data,
                       self.act), None
