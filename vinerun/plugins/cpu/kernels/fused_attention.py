"""The FusedAttention kernel: ATen's ``scaled_dot_product_attention`` on strided head views.

Inputs named in the node's ``split`` arrive as ``[B, S, H*D]`` (possibly strided, e.g. the parts of a
VariadicSplit) and are viewed as ``[B, H, S, D]`` without a copy; a merged output is written back as
``[B, S, H*D]`` in one copy. float16 computes in float32 (no native CPU half kernels); float32 runs the C kernel
of :mod:`.attention_c` where it is built, bfloat16 (and float32 without it, on AVX-512 CPUs) oneDNN directly
(:mod:`.attention_dnnl`), each with this ATen path as its fallback (BERT 6x384's six f32 layers: 2.3 ms on
ATen, 1.8-1.9 ms on oneDNN, 2 threads).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import float_inputs, strided_view, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.attention_c import c_attention_kernel
from vinerun.plugins.cpu.kernels.attention_dnnl import dnnl_attention_run
from vinerun.transformations.fused_transformer import zero_rows


def _head_view(a: np.ndarray, heads: int) -> torch.Tensor:
    """``[B, S, H*D]`` as a ``[B, H, S, D]`` view; a strided input (a VariadicSplit's part) is not copied."""
    t = strided_view(a) if a.strides[-1] == a.itemsize else None
    if t is None:
        t = to_torch(a)
    b, s, e = t.shape
    return t.view(b, s, heads, e // heads).transpose(1, 2)


@cpu_kernel("FusedAttention")
def fused_attention(node: Node) -> Kernel | None:
    kernel = _attention(node)
    if (kernel is None or not node.zero_masked_rows or node.get_input_size() < 4
            or kernel.exec_type == "blocked_attention"):  # the C kernel zeros those rows itself, its fallback too
        return kernel
    return Kernel(_guarded(kernel.fn, node), kernel.exec_type)


def _guarded(base: Callable[[list], list], node: Node) -> Callable[[list], list]:
    """``base`` with the NaN guard: rows the mask removes entirely are zeros (a Python step after the kernel, so
    no native one)."""
    merge = node.merge

    def guarded(inputs: list) -> list:
        return [zero_rows(base(inputs)[0], inputs[3] if len(inputs) > 3 else None, merge)]

    return guarded


def _attention(node: Node) -> Kernel | None:
    if not float_inputs(node, *range(node.get_input_size())):
        return None
    split = [name in node.split for name in "qkv"]
    heads, scale, merge = node.heads, float(node.scale), node.merge
    sdpa = F.scaled_dot_product_attention

    def run(inputs: list) -> list:
        qkv = []
        for a, is_split in zip(inputs[:3], split, strict=True):
            qkv.append(_head_view(a, heads) if is_split else to_torch(a))
        dtype = qkv[0].dtype
        if dtype == torch.float16:
            qkv = [t.float() for t in qkv]
        mask = to_torch(inputs[3]).to(qkv[0].dtype) if len(inputs) > 3 and inputs[3] is not None else None
        y = sdpa(qkv[0], qkv[1], qkv[2], attn_mask=mask, scale=scale)
        if merge:
            b, h, s, d = y.shape
            y = y.transpose(1, 2).reshape(b, s, h * d)
        return [to_numpy(y.to(dtype).contiguous())]

    guarded = _guarded(run, node) if node.zero_masked_rows else run
    blocked = c_attention_kernel(node, guarded)  # f32: one C kernel, ATen as the fallback
    if blocked is not None:
        return blocked
    direct = dnnl_attention_run(node, run)  # oneDNN primitives, ATen as the fallback
    return Kernel(run, "aten_sdpa_fused") if direct is None else Kernel(direct, "onednn_attention")
