"""Normalization kernels on ATen, floats: BatchNormInference, MVN, GroupNormalization, LRN, NormalizeL2,
and the ONNX LayerNormalization / RMSNormalization.

Statistics of f16/bf16 inputs are computed in f32 (as the references do in wider types).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.ops.normalization import axes_value
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv import float_node


def widened(t: torch.Tensor) -> torch.Tensor:
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def static_rank(node: Node) -> int | None:
    rank = node.get_input_partial_shape(0).rank
    return rank.get_length() if rank.is_static() else None


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
    rank = static_rank(node)
    if not float_node(node, 1) or rank is None:
        return None
    axes = axes_value(node, 1, rank)
    if not axes:
        return None
    eps, inside = node.eps, node.eps_mode == "inside_sqrt"
    trailing = axes == list(range(axes[0], rank))
    if trailing and inside and node.normalize_variance:
        def layer_norm(inputs: list) -> list:
            x = to_torch(inputs[0])
            return [to_numpy(F.layer_norm(widened(x), x.shape[axes[0]:], eps=eps).to(x.dtype))]

        return Kernel(layer_norm, "aten_layer_norm")

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        xw = widened(x)
        if not node.normalize_variance:
            return [to_numpy((xw - xw.mean(dim=axes, keepdim=True)).to(x.dtype))]
        var, mean = torch.var_mean(xw, dim=axes, correction=0, keepdim=True)
        std = torch.sqrt(var + eps) if inside else torch.sqrt(var) + eps
        return [to_numpy(((xw - mean) / std).to(x.dtype))]

    return Kernel(run, "aten_mvn")


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
    rank = static_rank(node)
    if not float_node(node, 1) or rank is None or rank < 3 or node.size % 2 == 0:
        return None
    if axes_value(node, 1, rank) != [1]:
        return None
    size, alpha, beta, bias = node.size, node.alpha, node.beta, node.bias

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        return [to_numpy(F.local_response_norm(widened(x), size, alpha, beta, bias).to(x.dtype))]

    return Kernel(run, "aten_lrn")


@cpu_kernel("NormalizeL2")
def normalize_l2(node: Node) -> Kernel | None:
    rank = static_rank(node)
    if not float_node(node, 1) or rank is None:
        return None
    axes = axes_value(node, 1, rank)
    if not axes:
        return None
    eps, add = node.eps, node.eps_mode == "add"

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        xw = widened(x)
        ss = (xw * xw).sum(dim=axes, keepdim=True)
        ss = ss + eps if add else ss.clamp_min(eps)
        return [to_numpy((xw / ss.sqrt()).to(x.dtype))]

    return Kernel(run, "aten_normalize_l2")


def stash(node: Node, x: torch.Tensor) -> torch.dtype:
    """Computation dtype: f64 for f64 inputs, else the stash type (f32 unless asked otherwise)."""
    if x.dtype == torch.float64:
        return torch.float64
    return {1: torch.float32, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16}[node.stash_type]


@cpu_kernel("LayerNormalization")
def layer_norm(node: Node) -> Kernel | None:
    rank = static_rank(node)
    if not float_node(node, 2) or rank is None:
        return None
    first = node.first_axis(rank)
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
    rank = static_rank(node)
    if not float_node(node, 2) or rank is None:
        return None
    first = node.first_axis(rank)

    def run(inputs: list) -> list:
        x, scale = to_torch(inputs[0]), to_torch(inputs[1])
        xs = x.to(stash(node, x))
        y = F.rms_norm(xs, xs.shape[first:], eps=node.epsilon).to(x.dtype) * scale
        return [to_numpy(y)]

    return Kernel(run, "aten_rms_norm")

