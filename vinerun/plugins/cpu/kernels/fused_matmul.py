"""The FusedMatMul kernel: oneDNN inner product with the weight prepacked once, bias and activation fused.

Fastest path, where ``onednn-cpu-gomp`` is installed (bf16, and f32 on AVX-512 CPUs): the direct binding of
:mod:`.matmul_dnnl` (measured on MobileNetV2's classifier 0.13-0.19 ms against 0.24-0.25 ms for the path
below, BERT's 36 matmuls 13.6-14.7 ms against 14.8-15.5 ms). Else (f32 or bf16):
``torch.ops.mkldnn._linear_pointwise`` on a weight reordered by
``torch.ops.mkldnn._reorder_linear_weight`` (one copy per intra-op thread count), with the (f32) bias and,
where oneDNN has it, the activation as post-ops; other activations and the residual sum run in place after it.
In f32 only ReLU is fused (see below); bf16 fuses every activation oneDNN has (GELU, ...): there a separate
ATen pass over the output costs more than the post-op.
On CPUs without AVX-512 the f32 path is MKL's ``addmm`` instead: measured on a 2-core AVX2 EPYC, 1 thread,
BERT's [128, 384] x [384, 384 / 1536] and [128, 1536] x [1536, 384] shapes run at ~88 GFLOPS in ``addmm``
against ~79 in oneDNN's inner product (on 2 threads they tie). Other float types run ``torch.matmul`` with
the post-ops in ATen.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.device_info import cpu_flags
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._torch import float_node, mkldnn_bf16, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.fused_conv import _onednn_attr, _Parts
from vinerun.plugins.cpu.kernels.matmul_dnnl import dnnl_dynamic_linear_kernel, dnnl_linear_kernel

_MKLDNN = torch.ops.mkldnn
_AVX512 = "avx512f" in cpu_flags()


def f32_exec_type() -> str:
    """The exec type of the f32 path on this CPU (profiling reports it)."""
    if not _AVX512:
        return "mkl_addmm"
    return "onednn_matmul" if library() is not None else "onednn_linear"

#: activations oneDNN's inner product fuses at least as fast as a separate ATen op on AVX2
_POST_OPS = {"Relu": "relu"}


class PackedLinearWeight:
    """An ``[N, K]`` weight reordered for oneDNN's inner product, one copy per intra-op thread count.

    >>> packed = PackedLinearWeight(torch.randn(16, 8), 4)
    >>> packed.get().shape
    torch.Size([16, 8])
    """

    def __init__(self, w: torch.Tensor, rows: int | None):
        self.w = w
        self.rows = rows
        self.by_threads = {torch.get_num_threads(): _MKLDNN._reorder_linear_weight(w, rows)}

    def get(self) -> torch.Tensor:
        threads = torch.get_num_threads()
        packed = self.by_threads.get(threads)
        if packed is None:
            packed = self.by_threads[threads] = _MKLDNN._reorder_linear_weight(self.w, self.rows)
        return packed


def _bias(node: Any, parts: _Parts, n: int, dtype: np.dtype) -> np.ndarray | None:
    if parts.bias_index is None:
        return None
    b = node.const_input(parts.bias_index)
    return np.array(np.broadcast_to(b.reshape(-1), (n,)), dtype)


def _post_op(parts: _Parts, bf16: bool) -> tuple[str, list[Any], str] | None:
    """The activation before the sum as a oneDNN post-op (attr, scalars, algorithm), where it is fused."""
    if parts.pre is None:
        return None
    if bf16:
        return _onednn_attr(parts.pre, parts.beta.get(id(parts.pre)))
    attr = _POST_OPS.get(parts.pre.type_name)
    return None if attr is None else (attr, [], "")


def _onednn_kernel(node: Any, parts: _Parts, w: np.ndarray) -> Kernel | None:
    """The prepacked oneDNN path for f32 and bf16 (None when the node does not fit it)."""
    et = node.get_input_element_type(0).get_type_name()
    if et not in ("f32", "bf16") or (et == "bf16" and not mkldnn_bf16()):
        return None
    wt = np.array(w if node.transpose_b else w.T, np.float32, order="C")  # [N, K], a writable copy
    xshape = node.get_input_partial_shape(0)
    rows = int(np.prod([int(d) for d in xshape.to_shape()][:-1])) if xshape.is_static else None
    packed = PackedLinearWeight(torch.from_numpy(wt).to(torch.bfloat16 if et == "bf16" else torch.float32), rows)
    b = _bias(node, parts, wt.shape[0], np.dtype(np.float32))
    bias = None if b is None else torch.from_numpy(b)
    fused = _post_op(parts, et == "bf16")
    act = None if fused is not None else parts.act(parts.pre)
    attr, scalars, algorithm = fused or ("none", [], "")
    linear = _MKLDNN._linear_pointwise
    residual = parts.sum_index
    post = parts.act(parts.post)
    n, k = wt.shape
    # dynamic shapes, f32: a single row (a recurrent step, as silero-vad's LSTM) runs MKL's addmm, 6-12 us
    # where the oneDNN op, which makes its primitive per call, takes 26-29 us ([1, 128 or 256] x [., 512])
    # ([K, N] copy made at the first single row, not at compile: a transposing copy of ddddocr's [8210, 1024]
    # classifier took 134 ms of its compile, for a path its sequences never take)
    gemv_weights = functools.cache(lambda: torch.from_numpy(np.ascontiguousarray(wt.T))) \
        if rows is None and et == "f32" else None
    gemv_relu = attr == "relu"

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        if not x.is_contiguous():
            x = x.contiguous()
        if gemv_weights is not None and x.numel() == k:
            gemv = gemv_weights()
            y = torch.mm(x.reshape(1, k), gemv) if bias is None else torch.addmm(bias, x.reshape(1, k), gemv)
            y = y.reshape(*x.shape[:-1], n)
            if gemv_relu:
                y = y.relu_()
        else:
            y = linear(x, packed.get(), bias, attr, scalars, algorithm)
        if act is not None:
            y = act(y)
        if residual is not None:
            y = y.add_(to_torch(inputs[residual]))
            if post is not None:
                y = post(y)
        return [to_numpy(y)]

    return Kernel(run, "onednn_linear")


def _mkl_kernel(node: Any, parts: _Parts, w: np.ndarray) -> Kernel | None:
    """f32 on CPUs without AVX-512: ``addmm`` (MKL sgemm) on the 2-D view of the input (None otherwise)."""
    if node.get_input_element_type(0).get_type_name() != "f32" or _AVX512:
        return None
    weight = torch.from_numpy(np.array(w.T if node.transpose_b else w, np.float32, order="C"))  # [K, N], a copy
    k, n = weight.shape
    b = _bias(node, parts, n, np.dtype(np.float32))
    bias = torch.from_numpy(b) if b is not None else torch.zeros(n)
    act, residual, post = parts.act(parts.pre), parts.sum_index, parts.act(parts.post)
    addmm = torch.addmm

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        y = addmm(bias, x.reshape(-1, k), weight).view(*x.shape[:-1], n)
        if act is not None:
            y = act(y)
        if residual is not None:
            y = y.add_(to_torch(inputs[residual]))
            if post is not None:
                y = post(y)
        return [y.numpy()]

    return Kernel(run, "mkl_addmm")


def _aten_kernel(node: Any, parts: _Parts, w: np.ndarray) -> Kernel:
    """``torch.matmul`` by the constant weight, then the bias and activation in ATen (any float type)."""
    weight = to_torch(np.ascontiguousarray(w.T if node.transpose_b else w))
    b = _bias(node, parts, weight.shape[1], w.dtype)
    bias = None if b is None else to_torch(b)
    act = parts.act(parts.pre)
    residual = parts.sum_index
    post = parts.act(parts.post)

    def run(inputs: list) -> list:
        y = torch.matmul(to_torch(inputs[0]), weight)
        if bias is not None:
            y = y.add_(bias)
        if act is not None:
            y = act(y)
        if residual is not None:
            y = y.add_(to_torch(inputs[residual]))
            if post is not None:
                y = post(y)
        return [to_numpy(y)]

    return Kernel(run, "aten_matmul_fused")


@cpu_kernel("FusedMatMul")
def fused_matmul(node: Node) -> Kernel | None:
    w = node.const_input(1)
    if w is None or w.ndim != 2 or not float_node(node):
        return None
    parts = _Parts(node)
    return (_direct_kernel(node, parts, w) or _mkl_kernel(node, parts, w) or _onednn_kernel(node, parts, w)
            or _aten_kernel(node, parts, w))


def _direct_kernel(node: Any, parts: _Parts, w: np.ndarray) -> Kernel | None:
    """bf16, and f32 on AVX-512 CPUs, through the direct oneDNN binding (:mod:`.matmul_dnnl`), where it is
    installed."""
    if node.get_input_element_type(0).get_type_name() != "bf16" and not _AVX512:
        return None
    kn = w.T if node.transpose_b else w
    bias = _bias(node, parts, kn.shape[1], np.dtype(np.float32))
    if node.get_input_partial_shape(0).is_static:
        return dnnl_linear_kernel(node, parts, kn, bias)
    # the fallback (row counts beyond the primitives made) is made when first needed: its weight copies cost
    # ~0.1 s of compile for ddddocr's [8210, 1024] classifier
    fallback = functools.cache(lambda: _onednn_kernel(node, parts, w) or _aten_kernel(node, parts, w))
    return dnnl_dynamic_linear_kernel(node, parts, kn, bias, Kernel(lambda inputs: fallback().fn(inputs),
                                                                   "onednn_linear"))
