"""Attention kernels on ATen's ``scaled_dot_product_attention``: OpenVINO SDPA and ONNX Attention.

ONNX Attention runs here without softcap and without a consumed ``qk_matmul_output``; its causal,
window, padding and mask inputs are folded into one additive bias (built with the reference's
helpers). Rows with every key masked come out as zeros, as in the reference.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.ops.attention import attention_bias, to_heads
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import float_inputs, to_numpy, to_torch


def _compute(t: torch.Tensor) -> torch.Tensor:
    """float16 computes in float32 (no native CPU half kernels; matches the reference's rounding)."""
    return t.float() if t.dtype == torch.float16 else t


def _zero_dead_rows(y: torch.Tensor) -> torch.Tensor:
    """Fully masked rows give NaN in ATen's softmax; the reference defines them as zeros."""
    return torch.nan_to_num(y, nan=0.0)


@cpu_kernel("ScaledDotProductAttention")
def sdpa(node: Node) -> Kernel | None:
    if not float_inputs(node, 0, 1, 2):
        return None
    causal = node.causal

    def run(inputs):
        q, k, v = (_compute(to_torch(a)) for a in inputs[:3])
        mask = inputs[3] if len(inputs) > 3 and not causal else None
        scale = float(np.asarray(inputs[4]).reshape(())) if len(inputs) > 4 and inputs[4] is not None else None
        m = None
        if mask is not None:
            m = to_torch(mask) if mask.dtype == np.bool_ else to_torch(mask).to(q.dtype)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal, scale=scale)
        y = _zero_dead_rows(y) if m is not None else y
        return [to_numpy(y.to(to_torch(inputs[0]).dtype))]

    return Kernel(run, "aten_sdpa")


@cpu_kernel("Attention")
def onnx_attention(node: Node) -> Kernel | None:
    if not float_inputs(node, 0, 1, 2) or node.softcap or node.output(3).get_target_inputs():
        return None
    a = node.get_attributes()
    hq, hkv = a["q_num_heads"], a["kv_num_heads"]

    def run(inputs):
        inputs = list(inputs) + [None] * (7 - len(inputs))
        Q, K, V, mask, past_k, past_v, nonpad = inputs
        q = to_torch(np.ascontiguousarray(to_heads(Q, hq)))
        k = to_torch(np.ascontiguousarray(to_heads(K, hkv)))
        v = to_torch(np.ascontiguousarray(to_heads(V, hkv)))
        if past_k is not None:
            k = torch.cat([to_torch(past_k), k], dim=2)
            v = torch.cat([to_torch(past_v), v], dim=2)
        batch, heads, sq = q.shape[:3]
        total = k.shape[2]
        bias = attention_bias(batch, sq, total, None if past_k is None else past_k.shape[2], nonpad, mask,
                              bool(a["is_causal"]), a["left_window_size"], a["right_window_size"], np.float32)
        attn_bias = None if bias.min(initial=0.0) == 0.0 and bias.max(initial=0.0) == 0.0 else (
            torch.from_numpy(np.ascontiguousarray(bias)).to(_compute(q).dtype))
        y = F.scaled_dot_product_attention(_compute(q), _compute(k), _compute(v), attn_mask=attn_bias,
                                           scale=a["scale"], enable_gqa=heads != k.shape[1])
        y = _zero_dead_rows(y).to(q.dtype)
        if Q.ndim == 3:
            y = y.transpose(1, 2).reshape(batch, sq, -1)
        return [to_numpy(y.contiguous()), to_numpy(k.contiguous()), to_numpy(v.contiguous()), None]

    return Kernel(run, "aten_sdpa")
