"""The fused transformer ops (:mod:`vinerun.transformations.fused_transformer`) on the GPU: attention through
``F.scaled_dot_product_attention`` (FlashAttention / memory-efficient / cuDNN attention on CUDA) reading the
heads as strided views, and LayerNorm through ``F.layer_norm``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, GpuKernel, gpu_kernel, input_type


def _heads(x: torch.Tensor, split: bool, heads: int) -> torch.Tensor:
    """``[B, S, H*D]`` as a ``[B, H, S, D]`` view (no copy), or ``x`` when it is already per head."""
    if not split:
        return x
    b, s, e = x.shape
    return x.view(b, s, heads, e // heads).transpose(1, 2)


@gpu_kernel("FusedAttention")
def fused_attention(node: Node, device: torch.device) -> GpuKernel | None:
    if any(input_type(node, i) not in FLOAT_TYPES for i in range(node.get_input_size())):
        return None
    attrs = node.get_attributes()
    split, heads, merge, scale = attrs["split"], int(attrs["heads"]), bool(attrs["merge"]), float(attrs["scale"])
    guard = bool(attrs["zero_masked_rows"])
    masked = node.get_input_size() > 3

    def run(inputs: list) -> list:
        q, k, v = (_heads(inputs[i], "qkv"[i] in split, heads) for i in range(3))
        mask = inputs[3].to(q.dtype) if masked else None
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        if guard and mask is not None:
            # rows whose mask hides every key: the exporters' NaN guard makes them zeros
            y = y.masked_fill(torch.isneginf(mask).all(dim=-1, keepdim=True), 0.0)
        if merge:
            b, h, s, d = y.shape
            y = y.transpose(1, 2).reshape(b, s, h * d)
        return [y]

    return GpuKernel(run, "sdpa" if masked else "sdpa_flash")


@gpu_kernel("FusedLayerNorm")
def fused_layer_norm(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) not in FLOAT_TYPES or not node.get_input_partial_shape(0)[-1].is_static:
        return None
    n = node.get_input_partial_shape(0)[-1].get_length()
    eps = float(node.get_attributes()["eps"])

    def run(inputs: list) -> list:
        x, gamma, beta = inputs
        return [F.layer_norm(x, (n,), gamma.to(x.dtype), beta.to(x.dtype), eps)]

    return GpuKernel(run, "gpu_layer_norm")
