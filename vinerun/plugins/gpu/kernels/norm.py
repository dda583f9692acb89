"""Normalizations on the device, floats: BatchNormInference, MVN, NormalizeL2, LRN (across channels), GRN.

cuDNN's batch and layer norms (an MVN over trailing axes is a layer norm) keep f16 inputs with f32 statistics;
the other formulas compute f16 / bf16 in f32, as the references compute wider.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.ops.normalization import axes_value
from vinerun.plugins.gpu.kernels import GpuKernel, KernelFn, gpu_kernel
from vinerun.plugins.gpu.kernels._nn import float_node, static_rank, widened


def _axes(node: Node) -> tuple[int, list[int]] | None:
    """(rank, axes) of a float node of static rank with constant, non-empty axes (input 1); else None."""
    rank = static_rank(node)
    if not float_node(node) or rank is None:
        return None
    axes = axes_value(node, 1, rank)
    return (rank, axes) if axes else None


def _on_widened(fn: Callable[[torch.Tensor], torch.Tensor]) -> KernelFn:
    """``fn`` of input 0 computed in f32 for half types, returned in the input's type."""
    return lambda x: [fn(widened(x[0])).to(x[0].dtype)]


@gpu_kernel("BatchNormInference")
def batch_norm(node: Node, device: torch.device) -> GpuKernel | None:
    rank = static_rank(node)
    if not float_node(node, 5) or rank is None or rank < 2:
        return None
    eps = node.epsilon

    def run(inputs: list) -> list:
        x, gamma, beta, mean, var = inputs
        return [F.batch_norm(x, mean, var, gamma, beta, False, 0.0, eps)]

    return GpuKernel(run, "cudnn_batch_norm")


@gpu_kernel("MVN")
def mvn(node: Node, device: torch.device) -> GpuKernel | None:
    found = _axes(node)
    if found is None:
        return None
    rank, axes = found
    eps, inside, variance = node.eps, node.eps_mode == "inside_sqrt", node.normalize_variance
    if axes == list(range(axes[0], rank)) and inside and variance:
        return GpuKernel(lambda x: [F.layer_norm(x[0], x[0].shape[axes[0]:], eps=eps)], "gpu_layer_norm")

    def normalize(x: torch.Tensor) -> torch.Tensor:
        if not variance:
            return x - x.mean(dim=axes, keepdim=True)
        var, mean = torch.var_mean(x, dim=axes, correction=0, keepdim=True)
        return (x - mean) / (torch.sqrt(var + eps) if inside else torch.sqrt(var) + eps)

    return GpuKernel(_on_widened(normalize), "gpu_mvn")


@gpu_kernel("NormalizeL2")
def normalize_l2(node: Node, device: torch.device) -> GpuKernel | None:
    found = _axes(node)
    if found is None:
        return None
    axes, eps, add = found[1], node.eps, node.eps_mode == "add"

    def normalize(x: torch.Tensor) -> torch.Tensor:
        ss = (x * x).sum(dim=axes, keepdim=True)
        return x / (ss + eps if add else ss.clamp_min(eps)).sqrt()

    return GpuKernel(_on_widened(normalize), "gpu_normalize_l2")


@gpu_kernel("LRN")
def lrn(node: Node, device: torch.device) -> GpuKernel | None:
    found = _axes(node)
    if found is None or found[0] < 3 or found[1] != [1]:
        return None
    # the reference sums 2 * ((size - 1) // 2) + 1 channels and divides alpha by ``size``; PyTorch sums ``size``
    # channels and divides by the count it sums
    width = 2 * ((node.size - 1) // 2) + 1
    alpha, beta, bias = node.alpha * width / node.size, node.beta, node.bias
    return GpuKernel(_on_widened(lambda x: F.local_response_norm(x, width, alpha, beta, bias)), "gpu_lrn")


@gpu_kernel("GRN")
def grn(node: Node, device: torch.device) -> GpuKernel | None:
    if not float_node(node):
        return None
    bias = node.bias
    return GpuKernel(_on_widened(lambda x: x / torch.sqrt((x * x).sum(dim=1, keepdim=True) + bias)), "gpu_grn")
