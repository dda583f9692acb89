"""ScaledDotProductAttention (opset13) on ``F.scaled_dot_product_attention``: PyTorch picks FlashAttention,
memory-efficient attention or cuDNN's fused attention on CUDA.

The scale, when given, must be a Constant (read at compile time: no host read at run time). A float mask is added
in the query's type; rows where a mask hides every key come out as zeros, as in the reference (PyTorch gives NaN).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, GpuKernel, constant_input, gpu_kernel, input_type
from vinerun.plugins.gpu.kernels._nn import float_node


@gpu_kernel("ScaledDotProductAttention")
def sdpa(node: Node, device: torch.device) -> GpuKernel | None:
    if not float_node(node, 3):
        return None
    causal = node.causal
    masked = not causal and node.get_input_size() > 3 and node.input_value(3) is not None
    if masked and input_type(node, 3) not in (*FLOAT_TYPES, "boolean"):
        return None
    scale = None
    if node.get_input_size() > 4 and node.input_value(4) is not None:
        value = constant_input(node, 4)
        if value is None:
            return None
        scale = float(np.asarray(value).reshape(()))

    def run(inputs: list) -> list:
        q, k, v = inputs[:3]
        if not masked:
            return [F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)]
        mask = inputs[3] if inputs[3].dtype == torch.bool else inputs[3].to(q.dtype)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        return [torch.nan_to_num(y, nan=0.0)]

    return GpuKernel(run, "sdpa" if masked else "sdpa_flash")
