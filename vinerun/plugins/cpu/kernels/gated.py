"""Kernels for gated sequence blocks on ATen: SwiGLU and CausalConvWithState (a grouped ``conv1d``).

Half types compute in float32 and round once at the end, as the references do.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import float_inputs, to_numpy, to_torch


def _wide(t: torch.Tensor) -> torch.Tensor:
    """Compute in f32 (f64 stays f64)."""
    return t if t.dtype == torch.float64 else t.float()


@cpu_kernel("SwiGLU")
def swiglu(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    alpha = node.alpha

    def run(inputs):
        a, b = to_torch(inputs[0]), to_torch(inputs[1])
        wa = _wide(a)
        y = wa * torch.sigmoid(alpha * wa) * _wide(b)
        return [to_numpy(y.to(a.dtype))]

    return Kernel(run, "aten_swiglu")


@cpu_kernel("CausalConvWithState")
def causal_conv_with_state(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    silu = node.activation in ("silu", "swish")

    def run(inputs):
        x = to_torch(inputs[0])
        w = _wide(to_torch(inputs[1]))
        bias = inputs[2] if len(inputs) > 2 else None
        past = inputs[3] if len(inputs) > 3 else None
        k = w.shape[-1]
        xw = _wide(x)
        state = (_wide(to_torch(past)) if past is not None
                 else xw.new_zeros((x.shape[0], x.shape[1], k - 1)))
        padded = torch.cat([state, xw], dim=2)
        y = F.conv1d(padded, w, None if bias is None else _wide(to_torch(bias)), groups=x.shape[1])
        if silu:
            y = F.silu(y)
        present = padded[:, :, padded.shape[2] - (k - 1):]
        return [to_numpy(y.to(x.dtype)), to_numpy(present.to(x.dtype).contiguous())]

    return Kernel(run, "aten_conv1d")
