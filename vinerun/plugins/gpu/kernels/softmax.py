"""Softmax and LogSoftmax on the device (PyTorch's kernels accumulate f16 / bf16 in f32)."""

from __future__ import annotations

import torch

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import GpuKernel, gpu_kernel
from vinerun.plugins.gpu.kernels._nn import float_node, static_rank

_OPS = {"Softmax": torch.softmax, "LogSoftmax": torch.log_softmax}


@gpu_kernel(*_OPS)
def softmax(node: Node, device: torch.device) -> GpuKernel | None:
    rank = static_rank(node)
    if not float_node(node) or rank is None or not -rank <= node.axis < rank:
        return None
    op, axis = _OPS[node.type_name], node.axis
    return GpuKernel(lambda x: [op(x[0], axis)], "gpu_softmax")
