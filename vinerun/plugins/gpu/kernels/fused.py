"""Kernels of the GPU's fused nodes (:mod:`..fused_ops`).

FusedConvolution on CUDA: ``[bias] [residual] ReLU`` post-ops go into cuDNN's fused convolution (one kernel,
``cudnn_conv_fused``); other post-ops run as one generated Triton kernel over the convolution's output
(``cudnn_conv+triton_fused``, :mod:`._epilogue`). Elsewhere, and for FusedMatMul, the convolution / cuBLAS GEMM
takes a leading bias and the other post-ops are applied in place on the fresh output, each through its own
kernel (or, failing that, its reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import GpuKernel, gpu_kernel, select_kernel
from vinerun.plugins.gpu.kernels._epilogue import triton_epilogue
from vinerun.plugins.gpu.kernels._nn import Fallback, float_node, prepared_input, spatial_count
from vinerun.plugins.gpu.kernels.conv import ConvCall, conv_runner

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
    generic = GpuKernel(lambda x: [post(conv(x[0], x[1], bias(x)), x)], "cudnn_conv")
    if device.type != "cuda":
        return generic
    relu = _cudnn_relu(node, conv, index, bias)
    if relu is not None:  # one cuDNN kernel: bias, residual and ReLU in its epilogue
        return _with_fallback(node, relu, generic)
    tail = triton_epilogue(node, conv)
    return _with_fallback(node, tail, generic) if tail is not None else generic


def _with_fallback(node: Node, fast: GpuKernel, generic: GpuKernel) -> GpuKernel:
    """``fast`` until it fails once (a configuration its library rejects), then ``generic`` for good (and its
    exec type in profiles)."""
    run = Fallback(f"{fast.exec_type} kernel of {node.friendly_name}", fast.fn, generic.fn)
    kernel = GpuKernel(run, fast.exec_type)

    def fn(inputs: list) -> list:
        out = run(inputs)
        if run.failed:
            kernel.exec_type = generic.exec_type
        return out

    kernel.fn = fn
    return kernel


def _cudnn_relu(node: Node, conv: ConvCall, folded: int | None,
                bias: Callable[[list], torch.Tensor | None]) -> GpuKernel | None:
    """A 2-D convolution whose post-ops are ``[bias] [residual sum] ReLU`` as one cuDNN fused call
    (``torch.cudnn_convolution_relu`` / ``cudnn_convolution_add_relu``): no separate bias, add and ReLU kernels
    over the output. None for other post-ops, or a bias that is not a per-channel vector (``folded``: the input
    :func:`_folded_bias` reads it from, None when it could not)."""
    steps = node.steps
    body = [s.kind for s in steps[:-1]]
    if not steps or steps[-1].node.type_name != "Relu" or body not in ([], ["bias"], ["sum"], ["bias", "sum"]):
        return None
    if spatial_count(node) != 2 or not torch.backends.cudnn.is_available() or ("bias" in body and folded is None):
        return None
    residual = next((s.input_index for s in steps if s.kind == "sum"), None)

    def run(inputs: list) -> list:
        x, w, padding, groups = conv.operands(inputs[0], inputs[1])
        b = bias(inputs)
        if residual is None:
            return [torch.cudnn_convolution_relu(x, w, b, conv.strides, padding, conv.dilations, groups)]
        z = inputs[residual].contiguous(memory_format=torch.channels_last)
        return [torch.cudnn_convolution_add_relu(x, w, z, 1.0, b, conv.strides, padding, conv.dilations, groups)]

    return GpuKernel(run, "cudnn_conv_fused")


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
