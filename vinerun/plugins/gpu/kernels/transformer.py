"""The fused transformer ops (:mod:`vinerun.transformations.fused_transformer`) on the GPU: attention through
``F.scaled_dot_product_attention`` (FlashAttention / memory-efficient / cuDNN attention on CUDA) reading the
heads as strided views, LayerNorm through ``F.layer_norm``, and a residual add with its LayerNorm as one Triton
kernel (:mod:`..triton_layer_norm`)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu import triton_layer_norm, triton_rows
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, GpuKernel, gpu_kernel, input_type
from vinerun.plugins.gpu.kernels._nn import Fallback, prepared_input


def _heads(x: torch.Tensor, split: bool, heads: int) -> torch.Tensor:
    """``[B, S, H*D]`` as a ``[B, H, S, D]`` view (no copy), or ``x`` when it is already per head."""
    if not split:
        return x
    b, s, e = x.shape
    return x.view(b, s, heads, e // heads).transpose(1, 2)


#: (the last mask seen, its rows that hide every key): the layers of a model share one mask tensor in a run
_last_mask: tuple[torch.Tensor, torch.Tensor] | None = None


def _rows_of(mask: torch.Tensor) -> torch.Tensor:
    return torch.isneginf(mask).all(dim=-1, keepdim=True)


def _hidden_rows(mask: torch.Tensor) -> torch.Tensor:
    """``[..., Sq, 1]``: whether each query row of ``mask`` hides every key, computed once per mask tensor (the
    entry keeps the tensor alive, so ``is`` cannot match a new tensor at a reused address; a captured CUDA graph
    replays the computation where the first layer made it)."""
    global _last_mask
    last = _last_mask  # one read: another stream's thread may replace it
    if last is not None and last[0] is mask:
        return last[1]
    rows = _rows_of(mask)
    _last_mask = (mask, rows)
    return rows


def _row_zeroing(node: Node, device: torch.device) -> Callable[[torch.Tensor, torch.Tensor], None]:
    """``zero(y, rows)``: ``y``'s rows that ``rows`` flags set to zero, in place. On CUDA a Triton kernel that
    writes only those rows (:mod:`..triton_rows`; until it fails once), else ``masked_fill_``."""

    def fill(y: torch.Tensor, rows: torch.Tensor) -> None:
        y.masked_fill_(rows, 0.0)

    launch = triton_rows.launcher() if device.type == "cuda" else None
    if launch is None:
        return fill
    triton_or_fill = Fallback(f"row zeroing kernel of {node.friendly_name}", launch, fill)

    def zero(y: torch.Tensor, rows: torch.Tensor) -> None:
        if y.dim() == 4 and y.stride(-1) == 1 and rows.dim() <= 4:
            triton_or_fill(y, rows)
        else:
            fill(y, rows)

    return zero


@gpu_kernel("FusedAttention")
def fused_attention(node: Node, device: torch.device) -> GpuKernel | None:
    if any(input_type(node, i) not in FLOAT_TYPES for i in range(node.get_input_size())):
        return None
    attrs = node.get_attributes()
    split, heads, merge, scale = attrs["split"], int(attrs["heads"]), bool(attrs["merge"]), float(attrs["scale"])
    guard = bool(attrs["zero_masked_rows"])
    masked = node.get_input_size() > 3
    # a mask the plan computes is a new tensor each run; a model input may be the caller's, refilled between calls
    hidden_rows = _hidden_rows if masked and node.input_value(3).node.type_name != "Parameter" else _rows_of
    zero_rows = _row_zeroing(node, device)

    def run(inputs: list) -> list:
        q, k, v = (_heads(inputs[i], "qkv"[i] in split, heads) for i in range(3))
        mask = inputs[3].to(q.dtype) if masked else None
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        if guard and mask is not None:
            # rows whose mask hides every key: the exporters' NaN guard makes them zeros (in place: ``y`` is new)
            zero_rows(y, hidden_rows(inputs[3]))
        if merge:
            b, h, s, d = y.shape
            y = y.transpose(1, 2).reshape(b, s, h * d)
        return [y]

    return GpuKernel(run, "sdpa" if masked else "sdpa_flash")


def _norm_row(node: Node) -> tuple[int, float] | None:
    """(the normalized row's length, eps) of a float LayerNorm node with a static last axis; else None."""
    if input_type(node, 0) not in FLOAT_TYPES or not node.get_input_partial_shape(0)[-1].is_static:
        return None
    return node.get_input_partial_shape(0)[-1].get_length(), float(node.get_attributes()["eps"])


@gpu_kernel("FusedLayerNorm")
def fused_layer_norm(node: Node, device: torch.device) -> GpuKernel | None:
    row = _norm_row(node)
    if row is None:
        return None
    n, eps = row

    def run(inputs: list) -> list:
        x, gamma, beta = inputs
        return [F.layer_norm(x, (n,), gamma.to(x.dtype), beta.to(x.dtype), eps)]

    return GpuKernel(run, "gpu_layer_norm")


@gpu_kernel("ResidualLayerNorm")
def residual_layer_norm(node: Node, device: torch.device) -> GpuKernel | None:
    """On CUDA one Triton kernel (add, statistics, normalization); elsewhere PyTorch's add and layer_norm."""
    row = _norm_row(node)
    if row is None:
        return None
    n, eps = row
    launch = triton_layer_norm.launcher(n) if device.type == "cuda" else None
    affine = [prepared_input(node, i, lambda t: t.reshape(-1).contiguous()) for i in (2, 3)]

    def composed(inputs: list) -> list:
        x, residual, gamma, beta = inputs
        return [F.layer_norm(x + residual, (n,), gamma.to(x.dtype), beta.to(x.dtype), eps)]

    if launch is None:
        return GpuKernel(composed, "gpu_layer_norm")

    def run(inputs: list) -> list:
        x, residual = inputs[0].contiguous(), inputs[1].contiguous()
        y = torch.empty_like(x)
        launch(x, residual, affine[0](inputs[2]), affine[1](inputs[3]), y, eps)
        return [y]

    return GpuKernel(run, "triton_layer_norm")
