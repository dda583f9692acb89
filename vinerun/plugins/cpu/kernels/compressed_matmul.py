"""Kernels of the compressed-weight ops (:mod:`..compressed_weights`): MatMul and embedding Gather by int8 / int4
weights that stay compressed in memory (the layout of :mod:`..compressed_layout`).

CompressedMatMul runs the C kernel of ``csrc/compressed_matmul.c`` (exec type ``compressed_matmul_int8`` /
``_int4``, with ``_dq`` where the activations are quantized on the fly, ``DYNAMIC_QUANTIZATION_GROUP_SIZE``):
each call reads the packed bytes (1 or 1/2 byte a weight, against 4 for f32), 16 output columns and up to 4 rows
at a time, and never makes an f32 copy of the weight. Measured on the 2-core AVX512-VNNI EPYC (see docs/int8.md):
the dynamic-quantization path (VNNI ``vpdpbusd``) is the fastest at every row count; the f32 path (activations
not quantized) is as fast for a token (memory-bound) and slower for a prompt; oneDNN 3.2 (the bundled
``onednn-cpu-gomp``) has no weight-decompression attributes, and ``torch._int_mm`` took 147 us for [1, 768] x
[768, 3072] (the f32 matmul ~90 us). Without the compiled extension the ops run their NumPy reference, which also
dequantizes only one call's worth at a time.

CompressedGather dequantizes the rows it takes (NumPy): an embedding table stays compressed too.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.compressed_layout import dequantize_rows
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import data_address

try:
    import torch  # noqa: F401 - its libgomp first: the kernel's OpenMP must be the one torch and oneDNN share

    from vinerun.plugins.cpu.kernels import _compressed  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler
    _compressed = None


class _Params(ctypes.Structure):
    """``cm_params`` of csrc/compressed_matmul.c."""

    _fields_ = [("k", ctypes.c_int64), ("n", ctypes.c_int64), ("group", ctypes.c_int64), ("bits", ctypes.c_int64),
                ("dq", ctypes.c_int64), ("w", ctypes.c_void_p), ("scale", ctypes.c_void_p), ("zp", ctypes.c_void_p),
                ("bias", ctypes.c_void_p)]


_FN: Any = None


def _function() -> Any:
    global _FN
    if _FN is None and _compressed is not None:
        fn = ctypes.CDLL(_compressed.__file__).vr_compressed_matmul
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        fn.restype = ctypes.c_int
        _FN = fn
    return _FN


def available() -> bool:
    """Whether the C kernel was built."""
    return _function() is not None


def dq_chunk(k: int, group: int, bits: int, dq: int) -> int:
    """The activation quantization group the kernel uses for ``dq`` (DYNAMIC_QUANTIZATION_GROUP_SIZE), or 0 for
    the f32 path: 0 stays 0; a group of k or more is per row; else it must divide k, and the smaller of it and the
    weight group must divide the larger and be a whole number of the kernel's k steps (4, 8 for int4)."""
    if dq <= 0:
        return 0
    dq = min(dq, k)
    step = 8 if bits == 4 else 4
    chunk = min(dq, group)
    if k % dq or max(dq, group) % chunk or chunk % step:
        return 0
    return dq


class CompressedGemm:
    """``y [m, n] = x [m, k] @ W.T + bias`` for a packed compressed ``W``; a call takes f32 x and returns y.

    >>> gemm = CompressedGemm(packed, scale, zp, bias, n=768, k=768, group=128, bits=4, dq=32)  # doctest: +SKIP
    >>> gemm(np.ones((1, 768), np.float32)).shape  # doctest: +SKIP
    (1, 768)
    """

    def __init__(self, packed: np.ndarray, scale: np.ndarray, zp: np.ndarray, bias: np.ndarray | None, n: int,
                 k: int, group: int, bits: int, dq: int):
        self.keep = [np.ascontiguousarray(a) for a in (packed, scale, zp)]
        self.bias = None if bias is None else np.ascontiguousarray(np.asarray(bias, np.float32).reshape(-1))
        self.n, self.k = n, k
        self.params = _Params(k, n, group, bits, dq, *(a.ctypes.data for a in self.keep),
                              None if self.bias is None else self.bias.ctypes.data)
        self.address = ctypes.addressof(self.params)
        self.fn = _function()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, np.float32)
        y = np.empty(x.shape[:-1] + (self.n,), np.float32)
        if self.fn(self.address, data_address(x), data_address(y), x.size // self.k):
            raise MemoryError("compressed matmul: out of memory for the activation buffers")
        return y


@cpu_kernel("CompressedMatMul")
def compressed_matmul(node: Node) -> Kernel | None:
    consts = [node.const_input(i) for i in range(1, node.get_input_size())]
    if not available() or any(c is None for c in consts) or node.get_input_element_type(0).get_type_name() != "f32":
        return None
    n, k, group, bits = node.n, node.k, node.group, node.bits  # type: ignore[attr-defined]
    dq = dq_chunk(k, group, bits, node.dq_group)  # type: ignore[attr-defined]
    gemm = CompressedGemm(consts[0], consts[1], consts[2], consts[3] if len(consts) > 3 else None, n, k, group,
                          bits, dq)

    def run(inputs: list) -> list:
        return [gemm(inputs[0])]

    return Kernel(run, f"compressed_matmul_int{bits}" + ("_dq" if dq else ""))


@cpu_kernel("CompressedGather")
def compressed_gather(node: Node) -> Kernel | None:
    consts = [node.const_input(i) for i in range(3)]
    if any(c is None for c in consts):
        return None
    packed, scale, zp = consts
    rows, k, bits = node.n, node.k, node.bits  # type: ignore[attr-defined]

    def run(inputs: list) -> list:
        ids = np.asarray(inputs[3]).astype(np.int64)
        ids = np.where(ids < 0, ids + rows, ids)
        bad = (ids < 0) | (ids >= rows)
        y = dequantize_rows(packed, scale, zp, bits, k, np.where(bad, 0, ids))
        if bad.any():
            y[bad] = 0.0  # Gather's rule: an index out of range gives zeros
        return [y]

    return Kernel(run, f"compressed_gather_int{bits}")
