"""Winograd F(4x4, 3x3) convolution: f32 3x3 stride-1 convolutions in a quarter of the multiplications.

Each 4x4 output tile comes from a 6x6 input tile: the input tile is transformed (``B^T d B``), multiplied
element-wise by the transformed filters (``G g G^T``, 36 values per channel pair, made once here) and summed
over input channels (36 matrix products, one oneDNN batched matmul), then transformed back (``A^T m A``) with
the bias, activations and residual sum in the epilogue. The transforms are C (``csrc/winograd.c``) on
channels-last data; :class:`WinogradConv2d` is a C kernel (:mod:`._ckernel`) whose binding runs them, so it
takes a convolution's place in a native segment or a Python call alike.

The products' rounding differs from a direct convolution's (the transforms scale values by up to 8x and
1/24x): a layer's outputs agree with the direct ones to ~1e-5 of the output's range (ResNet-50's: 6.7e-6 on a
range of 15), so it runs only under ``EXECUTION_MODE_HINT=PERFORMANCE`` (the default) and never for bf16.
Measured on a 2-core AVX-512 CPU, 1 thread, inside ResNet-50 (filters read from memory): its 3x3 layers
56x56x64 2.0 -> 0.8-1.1 ms, 28x28x128 2.0 -> 0.7-0.8 ms, 14x14x256 1.9 -> 1.0-1.1 ms; the whole network 75 ->
63 ms. 7x7x512 gains nothing (4 tiles: the matmul is a read of its filters), see :func:`pays`.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from vinerun.plugins.cpu.kernels._ckernel import Activation, Api, CKernel, activation, available
from vinerun.plugins.cpu.kernels._dnnl import F32, Library
from vinerun.plugins.cpu.kernels._dnnl_ops import MatMul, dense

# the transforms of F(4x4, 3x3), interpolation points 0, -1, 1, -2, 2 and infinity
BT = np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
               [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float64)
G = np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
              [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float64)
AT = np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float64)
TILE = 4  # outputs per tile side
MAX_FILTER_BYTES = 16 << 20  # transformed filters of at most this size (36 * c * k f32)
__all__ = ["WinogradConv2d", "available", "epilogue", "geometry_fits", "pays", "transformed_filters"]


class _Params(ctypes.Structure):
    """``winograd_conv`` of csrc/winograd.c."""

    _fields_ = [("api", Api), ("n", ctypes.c_int64), ("h", ctypes.c_int64), ("w", ctypes.c_int64),
                ("c", ctypes.c_int64), ("k", ctypes.c_int64), ("tiles_h", ctypes.c_int64),
                ("tiles_w", ctypes.c_int64), ("bias", ctypes.c_void_p), ("pre", Activation),
                ("post", Activation), ("sum", ctypes.c_int64), ("matmul", ctypes.c_void_p),
                ("matmul_src", ctypes.c_void_p), ("matmul_dst", ctypes.c_void_p), ("matmul_nargs", ctypes.c_int64),
                ("matmul_args", ctypes.c_void_p)]


def transformed_filters(w: np.ndarray) -> np.ndarray:
    """``G g G^T`` of every [k, c] filter pair of ``w`` [k, c, 3, 3], as the matmul's weights [36, c, k] (f32,
    computed in f64). Two products over a [3, 3, c * k] copy, each a plain matrix product that writes its result
    in the order the next step reads: einsum, or transposing at the end, takes 5-20x longer."""
    k, c = w.shape[:2]
    by_tap = np.ascontiguousarray(np.transpose(w, (2, 3, 1, 0)), np.float64).reshape(3, 3, c * k)  # [a, b, ck]
    columns = np.matmul(G, by_tap)  # [a, j, ck]: over the filter's columns
    return (G @ columns.reshape(3, -1)).reshape(36, c, k).astype(np.float32)  # [i, j, ck]: over its rows


def epilogue(post_ops: list[tuple]) -> tuple[Activation, bool, Activation] | None:
    """(activation before the sum, whether there is a sum, activation after) for oneDNN-style post-ops, or None
    where the C epilogue cannot run them (an activation other than ReLU and Clamp, two in a row)."""
    split = next((i for i, op in enumerate(post_ops) if op[0] == "sum"), None)
    before = post_ops if split is None else post_ops[:split]
    after = [] if split is None else post_ops[split + 1:]
    if len(before) > 1 or len(after) > 1:
        return None
    pre, post = activation(before[0] if before else None), activation(after[0] if after else None)
    if pre is None or post is None:
        return None
    return pre, split is not None, post


def geometry_fits(w_shape: tuple[int, ...], strides: list[int], dilations: list[int], pads: list[int]) -> bool:
    """Whether a 2-D convolution (no groups) has the geometry this kernel computes: 3x3 filters, stride and
    dilation 1, one pixel of padding on every side."""
    return (len(w_shape) == 4 and tuple(w_shape[2:]) == (3, 3) and list(strides) == [1, 1]
            and list(dilations) == [1, 1] and list(pads) == [1, 1])


def pays(in_shape: tuple[int, ...], out_channels: int) -> bool:
    """Whether it beats oneDNN's direct convolution at 1 and at 2 threads (``benchmarks/winograd_sweep.py``, a
    2-core AVX-512 CPU, 7-112 pixels square, 16-512 channels: every shape chosen here runs 1.2-3x faster). The
    transforms and their parallel regions need channels to amortize them (at 2 threads 32 channels lose
    everywhere, 64 from 7x7 tiles up win, 128 from 3x3 tiles); the batched product needs tiles (7x7 pixels is 4:
    0.6-0.9x); and the transformed filters, 4x the direct ones and read from memory inside a network, stay at most
    16 MB (ResNet-50's 256-channel layers: 9.4 MB, 1.8x inside the network)."""
    n, c, h, w = in_shape
    tiles = n * -(-h // TILE) * -(-w // TILE)
    channels = min(c, out_channels)
    if 36 * c * out_channels * 4 > MAX_FILTER_BYTES:
        return False
    return (tiles >= 49 and channels >= 64) or (tiles >= 9 and channels >= 128)


class WinogradConv2d(CKernel):
    """A 3x3 stride-1 f32 convolution with one pixel of padding, channels-last source and destination (as
    :class:`~._dnnl.Conv2d` with the same keys ``(threads, channels_last_source)``; only channels-last sources).

    ``post_ops``: oneDNN-style entries, at most an activation (ReLU or Clamp) before and after a residual sum.
    """

    entry = "winograd"

    def __init__(self, lib: Library, w: np.ndarray, bias: np.ndarray | None, in_shape: tuple[int, ...],
                 post_ops: list[tuple]):
        super().__init__(lib)
        parts = epilogue(post_ops)
        if parts is None:
            raise ValueError(f"Winograd convolution: no epilogue for the post-ops {post_ops}")
        self.pre, self.sum, self.post = parts
        n, c, h, wd = in_shape
        k = w.shape[0]
        self.shape = (n, h, wd, c, k, -(-h // TILE), -(-wd // TILE))
        tiles = n * self.shape[5] * self.shape[6]
        # the C epilogue always adds one (zeros without)
        self.bias = np.zeros(k, np.float32) if bias is None else np.ascontiguousarray(bias, np.float32)
        self.matmul = MatMul(lib, dense((36, tiles, c), F32), transformed_filters(w), dense((36, tiles, k), F32))
        self.src_md = self.md((n, c, h, wd), (h * wd * c, 1, wd * c, c))
        self.dst_md = self.md((n, k, h, wd), (h * wd * k, 1, wd * k, k))

    def impl(self, key: tuple[int, bool]) -> str:
        if not key[1]:
            raise ValueError("Winograd convolution: the source must be channels-last")
        return f"winograd_f4x4_3x3+{self.matmul.impl_name(key[0])}"

    def _params(self, key: tuple[int, bool]) -> tuple[ctypes.Structure, Any]:
        mm = self.matmul.binding(key[0])
        params = _Params(Api.of(self.lib), *self.shape, self.bias.ctypes.data, self.pre, self.post, int(self.sum),
                         mm.primitive.value, mm.memories[0].value, mm.memories[1].value, len(mm.args),
                         ctypes.addressof(mm.args))
        return params, mm

    def takes_nchw(self, threads: int) -> bool:
        del threads
        return False
