"""Kernels of the GPU's fused nodes (:mod:`..fused_ops`): cuDNN convolution / cuBLAS GEMM, then the chain's post-ops
applied in place on the fresh output (a leading bias goes into the convolution's or GEMM's own bias argument).

A post-op without an in-place form here runs through its own device kernel (or, failing that, its reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import GpuKernel, gpu_kernel, select_kernel
from vinerun.plugins.gpu.kernels._nn import float_node, prepared_input
from vinerun.plugins.gpu.kernels.conv import conv_runner

#: ``op(y, operand) -> y``, in place where PyTorch has the form
PostFn = Callable[[torch.Tensor, Any], torch.Tensor]


def _activation(step_node: Node, device: torch.device) -> PostFn:
    kind, a = step_node.type_name, step_node.get_attributes()
    table: dict[str, PostFn] = {
        "Relu": lambda y, _: y.relu_(),
        "Sigmoid": lambda y, _: y.sigmoid_(),
        "Tanh": lambda y, _: y.tanh_(),
        "Clamp": lambda y, _: y.clamp_(a.get("min"), a.get("max")),
        "HSwish": lambda y, _: F.hardswish(y, inplace=True),
        "Elu": lambda y, _: F.elu(y, a.get("alpha", 1.0), inplace=True),
        "Mish": lambda y, _: F.mish(y, inplace=True),
        "SoftPlus": lambda y, _: F.softplus(y),
        "Gelu": lambda y, _: F.gelu(y, approximate="tanh" if a.get("approximation_mode", "").upper() == "TANH"
                                    else "none"),
        "Swish": lambda y, beta: F.silu(y, inplace=True) if beta is None else y.mul_(torch.sigmoid(y * beta)),
    }
    if kind in table:
        return table[kind]
    kernel = select_kernel(step_node, device)
    return lambda y, operand: kernel.fn([y] if operand is None else [y, operand])[0]


_LINEAR: dict[str, PostFn] = {"sum": lambda y, r: y.add_(r), "shift": lambda y, r: y.add_(r),
                              "bias": lambda y, r: y.add_(r), "scale": lambda y, r: y.mul_(r)}


def epilogue(node: Node, device: torch.device, folded: int) -> Callable[[torch.Tensor, list], torch.Tensor]:
    """The node's post-ops after the first ``folded`` (done by the convolution / GEMM) as one function."""
    ops = [(_LINEAR.get(s.kind) or _activation(s.node, device), s.input_index) for s in node.steps[folded:]]

    def apply(y: torch.Tensor, inputs: list) -> torch.Tensor:
        for op, index in ops:
            y = op(y, None if index is None else inputs[index])
        return y

    return apply


def _folded_bias(node: Node, channels: int | None) -> tuple[int | None, Callable[[list], torch.Tensor | None]]:
    """(index of the bias input, a reader of it as a ``[channels]`` vector) when the first post-op is a bias whose
    size fits ``channels``; else (None, a reader giving None)."""
    steps = node.steps
    if not steps or steps[0].kind != "bias" or channels is None:
        return None, lambda inputs: None
    index = steps[0].input_index
    size = node.input_value(index).partial_shape
    if not size.is_static or math.prod(d.get_length() for d in size) not in (1, channels):
        return None, lambda inputs: None
    vector = prepared_input(node, index, lambda b: b.reshape(-1).expand(channels).contiguous())
    return index, lambda inputs: vector(inputs[index])


def _static(node: Node, axis: int) -> int | None:
    dim = node.get_output_partial_shape(0)[axis]
    return dim.get_length() if dim.is_static else None


@gpu_kernel("FusedConvolution")
def fused_convolution(node: Node, device: torch.device) -> GpuKernel | None:
    conv = conv_runner(node, device)
    if conv is None:
        return None
    index, bias = _folded_bias(node, _static(node, 1))
    post = epilogue(node, device, 0 if index is None else 1)
    return GpuKernel(lambda x: [post(conv(x[0], x[1], bias(x)), x)], "cudnn_conv")


@gpu_kernel("FusedMatMul")
def fused_matmul(node: Node, device: torch.device) -> GpuKernel | None:
    if not float_node(node, 2) or node.transpose_a:
        return None
    # Linear's [N, K] weight: a [K, N] one is transposed once, on the first call
    weight = prepared_input(node, 1, (lambda w: w) if node.transpose_b else (lambda w: w.t().contiguous()))
    rank = node.get_output_partial_shape(0).rank.get_length()
    index, bias = _folded_bias(node, _static(node, rank - 1))
    post = epilogue(node, device, 0 if index is None else 1)
    return GpuKernel(lambda x: [post(F.linear(x[0], weight(x[1]), bias(x)), x)], "cublas_gemm")
