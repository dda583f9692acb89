"""More oneDNN primitives on the binding of :mod:`._dnnl`: matrix product, softmax, pooling, layer
normalization, concatenation, reorder, binary and unary element-wise ops, resampling and reductions.

Each is made once per thread count (the key) and called on raw buffer addresses, like
:class:`~._dnnl.Conv2d`. A layout is ``(dims, element strides, data type)``; strides describe any view
(a head split, a transposed operand, a channels-last tensor) without copies.

>>> mm = MatMul(library(), ((128, 384), (384, 1), BF16), weights, ((128, 1536), (1536, 1), BF16))  # doctest: +SKIP
>>> mm(threads, x.ctypes.data, y.ctypes.data)  # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from vinerun.plugins.cpu.kernels._dnnl import (
    _FWD_INFERENCE,
    ARG_BIAS,
    ARG_DST,
    ARG_SRC,
    ARG_SRC_1,
    ARG_WEIGHTS,
    F32,
    Dims,
    Library,
    Primitive,
)

Layout = tuple[tuple[int, ...], tuple[int, ...], int]
BINARY_ADD, SOFTMAX_ACCURATE, POOL_MAX, POOL_AVG_INCLUDE, POOL_AVG_EXCLUDE = 0x1FFF0, 0x30000, 0x1FF, 0x2FF, 0x3FF
_USE_SCALE, _USE_SHIFT, _ARG_SCALE, _ARG_SHIFT = 0x2, 0x4, 51, 52  # oneDNN 3.x normalization flags, arguments
_ARG_MULTIPLE_SRC = 1024
BINARY_MUL, BINARY_SUB = 0x1FFF1, 0x1FFF5
RESAMPLING_NEAREST = 0x2FFF0
RESAMPLING_LINEAR = 0x2FFF1  # half-pixel coordinates, edges clamped
#: reduction algorithm kinds (dnnl_alg_kind_t, oneDNN 3.x)
REDUCTION_MAX, REDUCTION_MIN, REDUCTION_SUM, REDUCTION_MEAN = 0x2FFF2, 0x2FFF3, 0x2FFF4, 0x2FFF6


def dense(dims: tuple[int, ...], dtype: int) -> Layout:
    """The C-contiguous layout of ``dims``."""
    strides, step = [], 1
    for d in reversed(dims):
        strides.append(step)
        step *= d
    return tuple(dims), tuple(reversed(strides)), dtype


def channels_last(dims: tuple[int, ...], dtype: int) -> Layout:
    """The channels-last layout of NCHW ``dims``."""
    n, c, h, w = dims
    return tuple(dims), (h * w * c, 1, w * c, c), dtype


def layout_of(a: np.ndarray, dtype: int) -> Layout:
    """The layout of array ``a`` (its shape and element strides)."""
    return a.shape, tuple(s // a.itemsize for s in a.strides), dtype


class MatMul(Primitive):
    """``dst = src @ weights + bias``, then the post-ops; 2-D or batched, any strides, broadcast batch dims.

    ``weights`` is an f32 array (a constant: reordered once into the primitive's layout, of type
    ``weights_type``) or a layout (a runtime argument). The bias is f32, broadcast over the rows. A call passes
    ``(src, [weights,] dst, [binary operands...])`` addresses.
    """

    def __init__(self, lib: Library, src: Layout, weights: np.ndarray | Layout, dst: Layout,
                 bias: np.ndarray | None = None, post_ops: list[tuple] | None = None, weights_type: int = F32,
                 **quantization: Any):
        super().__init__(lib, post_ops, **quantization)
        self.src_md, self.dst_md = self.md(*src), self.md(*dst)
        self.constant = isinstance(weights, np.ndarray)
        if isinstance(weights, np.ndarray):  # int8 weights stay int8 (an int8 matmul: see matmul_int8)
            # any strides (a transposed constant): the reorder to the primitive's layout reads them as they are
            self.w_plain = np.asarray(weights, np.int8 if weights.dtype == np.int8 else np.float32)
            self.w_md = self.md(self.w_plain.shape, None, weights_type)
        else:
            self.w_md = self.md(*weights)
        self.bias = None if bias is None else np.ascontiguousarray(bias, np.float32).reshape(1, -1)
        self.b_md = None
        if self.bias is not None:
            rows = (1,) * (len(dst[0]) - 1)
            self.b_md = self.md(rows + (self.bias.shape[1],), (self.bias.shape[1],) * len(rows) + (1,))

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_matmul_primitive_desc_create(ctypes.byref(pd), lib.engine, self.src_md, self.w_md,
                                                            self.b_md, self.dst_md, attr),
                  "matmul_primitive_desc_create")
        return pd

    def _runtime(self, key: int) -> list[tuple[int, ctypes.c_void_p]]:
        weights = [] if self.constant else [(ARG_WEIGHTS, self.w_md)]
        return [(ARG_SRC, self.src_md), *weights, (ARG_DST, self.dst_md), *self.binary_args()]

    def _constants(self, pd: ctypes.c_void_p) -> list[tuple[int, ctypes.c_void_p]]:
        lib, out = self.lib, []
        if self.constant:
            out.append((ARG_WEIGHTS, self.prepacked(self.w_plain, pd)))
        if self.bias is not None:
            out.append((ARG_BIAS, self._own("memory", lib.memory(self.b_md, self.bias.ctypes.data))))
        return out


class _SrcDst(Primitive):
    """A primitive of one source and one destination (a call passes their addresses)."""

    def __init__(self, lib: Library, src: Layout, dst: Layout, **quantization: Any):
        super().__init__(lib, **quantization)
        self.src_md, self.dst_md = self.md(*src), self.md(*dst)

    def _runtime(self, key: int) -> list[tuple[int, ctypes.c_void_p]]:
        return [(ARG_SRC, self.src_md), (ARG_DST, self.dst_md)]


class Softmax(_SrcDst):
    """Softmax over ``axis`` from layout ``src`` to ``dst`` (the types may differ: f32 scores to bf16)."""

    def __init__(self, lib: Library, src: Layout, dst: Layout, axis: int):
        super().__init__(lib, src, dst)
        self.axis = axis

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_softmax_forward_primitive_desc_create(
            ctypes.byref(pd), lib.engine, _FWD_INFERENCE, SOFTMAX_ACCURATE, self.src_md, self.dst_md, self.axis, attr),
            "softmax_primitive_desc_create")
        return pd


class Pooling(_SrcDst):
    """2-D max or average pooling (``algorithm``: :data:`POOL_MAX`, :data:`POOL_AVG_INCLUDE`, ...)."""

    def __init__(self, lib: Library, src: Layout, dst: Layout, algorithm: int, kernel: list[int],
                 strides: list[int], pads_begin: list[int], pads_end: list[int], dilations: list[int]):
        super().__init__(lib, src, dst)
        self.algorithm = algorithm
        self.geometry = (strides, kernel, [d - 1 for d in dilations], pads_begin, pads_end)

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_pooling_forward_primitive_desc_create(
            ctypes.byref(pd), lib.engine, _FWD_INFERENCE, self.algorithm, self.src_md, self.dst_md,
            *(Dims(*g) for g in self.geometry), attr), "pooling_primitive_desc_create")
        return pd


class Reorder(_SrcDst):
    """A copy from layout ``src`` to layout ``dst`` (same dims): a conversion (f32 <-> bf16, or a quantization
    f32 <-> int8 with scales and zero points) and/or a transposition (NCHW <-> channels-last)."""

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_reorder_primitive_desc_create(ctypes.byref(pd), self.src_md, lib.engine,
                                                            self.dst_md, lib.engine, attr),
                  "reorder_primitive_desc_create")
        return pd


class LayerNorm(_SrcDst):
    """Layer normalization over the last axis: ``(x - mean) / sqrt(var + eps) * gamma + beta``, statistics
    in f32 (also for a bf16 source), f32 gamma and beta."""

    def __init__(self, lib: Library, src: Layout, dst: Layout, eps: float, gamma: np.ndarray, beta: np.ndarray):
        super().__init__(lib, src, dst)
        self.eps = eps
        self.gamma = np.ascontiguousarray(gamma, np.float32).reshape(-1)
        self.beta = np.ascontiguousarray(beta, np.float32).reshape(-1)

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_layer_normalization_forward_primitive_desc_create(
            ctypes.byref(pd), lib.engine, _FWD_INFERENCE, self.src_md, self.dst_md, None, ctypes.c_float(self.eps),
            ctypes.c_uint(_USE_SCALE | _USE_SHIFT), attr), "layer_normalization_primitive_desc_create")
        return pd

    def _constants(self, pd: ctypes.c_void_p) -> list[tuple[int, ctypes.c_void_p]]:
        lib = self.lib
        md = self.md(self.gamma.shape, (1,))
        return [(_ARG_SCALE, self._own("memory", lib.memory(md, self.gamma.ctypes.data))),
                (_ARG_SHIFT, self._own("memory", lib.memory(md, self.beta.ctypes.data)))]


class Concat(Primitive):
    """Concatenation of ``srcs`` along ``axis`` into ``dst``, any strides on either side (channels-last tensors
    joined along their channels stay channels-last). A call passes ``(src 0, dst, src 1, src 2, ...)`` addresses.
    """

    def __init__(self, lib: Library, srcs: list[Layout], dst: Layout, axis: int):
        super().__init__(lib)
        self.src_mds = [self.md(*src) for src in srcs]
        self.dst_md = self.md(*dst)
        self.axis = axis

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        srcs = (ctypes.c_void_p * len(self.src_mds))(*[md.value for md in self.src_mds])
        lib.check(lib.lib.dnnl_concat_primitive_desc_create(ctypes.byref(pd), lib.engine, self.dst_md,
                                                            len(self.src_mds), self.axis, srcs, attr),
                  "concat_primitive_desc_create")
        return pd

    def _runtime(self, key: int) -> list[tuple[int, ctypes.c_void_p]]:
        more = [(_ARG_MULTIPLE_SRC + i, md) for i, md in enumerate(self.src_mds) if i > 0]
        return [(_ARG_MULTIPLE_SRC, self.src_mds[0]), (ARG_DST, self.dst_md), *more]


class Binary(Primitive):
    """``dst = src0 op src1`` element-wise (``algorithm``: :data:`BINARY_ADD`, ...), ``src1`` broadcast along its
    dimensions of size 1; any strides. A call passes ``(src0, dst, src1)`` addresses."""

    def __init__(self, lib: Library, src0: Layout, src1: Layout, dst: Layout, algorithm: int,
                 post_ops: list[tuple] | None = None):
        super().__init__(lib, post_ops)
        self.src0_md, self.src1_md, self.dst_md = self.md(*src0), self.md(*src1), self.md(*dst)
        self.algorithm = algorithm

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_binary_primitive_desc_create(ctypes.byref(pd), lib.engine, self.algorithm,
                                                            self.src0_md, self.src1_md, self.dst_md, attr),
                  "binary_primitive_desc_create")
        return pd

    def _runtime(self, key: int) -> list[tuple[int, ctypes.c_void_p]]:
        return [(ARG_SRC, self.src0_md), (ARG_DST, self.dst_md), (ARG_SRC_1, self.src1_md)]


class Resampling(_SrcDst):
    """Resampling of the spatial axes from ``src`` to ``dst`` (``algorithm``: :data:`RESAMPLING_NEAREST`), the
    factors those of the two shapes."""

    def __init__(self, lib: Library, src: Layout, dst: Layout, algorithm: int):
        super().__init__(lib, src, dst)
        self.algorithm = algorithm

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_resampling_forward_primitive_desc_create(
            ctypes.byref(pd), lib.engine, _FWD_INFERENCE, self.algorithm, None, self.src_md, self.dst_md, attr),
            "resampling_primitive_desc_create")
        return pd


class Eltwise(_SrcDst):
    """``dst = f(src)`` element-wise (``algorithm``: an :data:`._dnnl.ELTWISE` kind, with its ``alpha`` and
    ``beta``); any strides on either side, the shapes equal."""

    def __init__(self, lib: Library, src: Layout, dst: Layout, algorithm: int, alpha: float, beta: float):
        super().__init__(lib, src, dst)
        self.algorithm, self.alpha, self.beta = algorithm, alpha, beta

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_eltwise_forward_primitive_desc_create(
            ctypes.byref(pd), lib.engine, _FWD_INFERENCE, self.algorithm, self.src_md, self.dst_md,
            ctypes.c_float(self.alpha), ctypes.c_float(self.beta), attr), "eltwise_primitive_desc_create")
        return pd


class Reduction(_SrcDst):
    """A reduction of ``src`` over the axes where ``dst`` has size 1 and ``src`` does not (``algorithm``:
    :data:`REDUCTION_SUM`, ...); any strides on either side."""

    def __init__(self, lib: Library, src: Layout, dst: Layout, algorithm: int):
        super().__init__(lib, src, dst)
        self.algorithm = algorithm

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd = self.lib, ctypes.c_void_p()
        lib.check(lib.lib.dnnl_reduction_primitive_desc_create(
            ctypes.byref(pd), lib.engine, self.algorithm, self.src_md, self.dst_md, ctypes.c_float(0.0),
            ctypes.c_float(0.0), attr), "reduction_primitive_desc_create")
        return pd
