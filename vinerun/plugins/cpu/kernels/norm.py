"""Normalization kernels on ATen, floats: BatchNormInference, MVN, GroupNormalization, LRN, NormalizeL2,
and the ONNX LayerNormalization / RMSNormalization.

Statistics of f16/bf16 inputs are computed in f32 (as the references do in wider types).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.ops.normalization import axes_value
from vinerun.plugins.cpu.kernels import Kernel, KernelFn, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import float_node, static_rank, to_numpy, to_torch, widened


def float_axes(node: Node) -> tuple[int, list[int]] | None:
    """(rank, axes) of a float node with a static rank and constant, non-empty axes (input 1); else None."""
    rank = static_rank(node)
    if not float_node(node, 1) or rank is None:
        return None
    axes = axes_value(node, 1, rank)
    return (rank, axes) if axes else None


def on_widened(fn: Callable[[torch.Tensor], torch.Tensor]) -> KernelFn:
    """A kernel computing ``fn`` on input 0 widened by ``widened`` and returning the input's dtype."""

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        return [to_numpy(fn(widened(x)).to(x.dtype))]

    return run


@cpu_kernel("BatchNormInference")
def batch_norm(node: Node) -> Kernel | None:
    if not float_node(node, 5) or static_rank(node) is None or static_rank(node) < 2:
        return None
    eps = node.epsilon

    def run(inputs: list) -> list:
        x, gamma, beta, mean, var = (to_torch(v) for v in inputs)
        if x.dtype in (torch.float16, torch.bfloat16):
            y = F.batch_norm(x.float(), mean.float(), var.float(), gamma.float(), beta.float(), False, 0.0, eps)
            return [to_numpy(y.to(x.dtype))]
        return [to_numpy(F.batch_norm(x, mean, var, gamma, beta, False, 0.0, eps))]

    return Kernel(run, "aten_batch_norm")


@cpu_kernel("MVN")
def mvn(node: Node) -> Kernel | None:
    found = float_axes(node)
    if found is None:
        return None
    rank, axes = found
    eps, inside = node.eps, node.eps_mode == "inside_sqrt"
    trailing = axes == list(range(axes[0], rank))
    if trailing and inside and node.normalize_variance:
        return Kernel(on_widened(lambda x: F.layer_norm(x, x.shape[axes[0]:], eps=eps)), "aten_layer_norm")

    def mean_variance(x: torch.Tensor) -> torch.Tensor:
        if not node.normalize_variance:
            return x - x.mean(dim=axes, keepdim=True)
        var, mean = torch.var_mean(x, dim=axes, correction=0, keepdim=True)
        std = torch.sqrt(var + eps) if inside else torch.sqrt(var) + eps
        return (x - mean) / std

    return Kernel(on_widened(mean_variance), "aten_mvn")


@cpu_kernel("GroupNormalization")
def group_norm(node: Node) -> Kernel | None:
    if not float_node(node, 3) or static_rank(node) is None:
        return None
    groups, eps = node.num_groups, node.epsilon

    def run(inputs: list) -> list:
        x, scale, bias = (to_torch(v) for v in inputs)
        y = F.group_norm(widened(x), groups, widened(scale), widened(bias), eps)
        return [to_numpy(y.to(x.dtype))]

    return Kernel(run, "aten_group_norm")


@cpu_kernel("LRN")
def lrn(node: Node) -> Kernel | None:
    found = float_axes(node)
    if found is None or found[0] < 3 or found[1] != [1] or node.size % 2 == 0:
        return None
    size, alpha, beta, bias = node.size, node.alpha, node.beta, node.bias
    return Kernel(on_widened(lambda x: F.local_response_norm(x, size, alpha, beta, bias)), "aten_lrn")


@cpu_kernel("NormalizeL2")
def normalize_l2(node: Node) -> Kernel | None:
    found = float_axes(node)
    if found is None:
        return None
    axes = found[1]
    eps, add = node.eps, node.eps_mode == "add"

    def normalize(x: torch.Tensor) -> torch.Tensor:
        ss = (x * x).sum(dim=axes, keepdim=True)
        ss = ss + eps if add else ss.clamp_min(eps)
        return x / ss.sqrt()

    return Kernel(on_widened(normalize), "aten_normalize_l2")


def first_norm_axis(node: Node) -> int | None:
    """The first normalized axis of a float LayerNormalization / RMSNormalization of static rank; else None."""
    rank = static_rank(node)
    if not float_node(node, 2) or rank is None:
        return None
    return node.first_axis(rank)


def stash(node: Node, x: torch.Tensor) -> torch.dtype:
    """Computation dtype: f64 for f64 inputs, else the stash type (f32 unless asked otherwise)."""
    if x.dtype == torch.float64:
        return torch.float64
    return {1: torch.float32, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16}[node.stash_type]


@cpu_kernel("LayerNormalization")
def layer_norm(node: Node) -> Kernel | None:
    first = first_norm_axis(node)
    if first is None:
        return None
    stat_dtype = node.get_output_element_type(1).to_dtype()

    def run(inputs: list) -> list:
        x, scale = to_torch(inputs[0]), to_torch(inputs[1])
        acc = stash(node, x)
        xs = x.to(acc)
        y, mean, rstd = torch.native_layer_norm(xs, xs.shape[first:], None, None, node.epsilon)
        y = y.to(x.dtype) * scale
        if len(inputs) > 2 and inputs[2] is not None:
            y = y + to_torch(inputs[2])
        return [to_numpy(y), to_numpy(mean).astype(stat_dtype), to_numpy(rstd).astype(stat_dtype)]

    return Kernel(run, "aten_layer_norm")


@cpu_kernel("RMSNormalization")
def rms_norm(node: Node) -> Kernel | None:
    first = first_norm_axis(node)
    if first is None:
        return None

    def run(inputs: list) -> list:
        x, scale = to_torch(inputs[0]), to_torch(inputs[1])
        xs = x.to(stash(node, x))
        y = F.rms_norm(xs, xs.shape[first:], eps=node.epsilon).to(x.dtype) * scale
        return [to_numpy(y)]

    return Kernel(run, "aten_rms_norm")

