"""MatMul on cuBLAS (through PyTorch), floats: NumPy's broadcasting and 1-D rules, ``transpose_a`` / ``transpose_b``.

Integer MatMul runs on the host (cuBLAS has no exact integer GEMM for every type PyTorch would accept).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import GpuKernel, constant_input, gpu_kernel
from vinerun.plugins.gpu.kernels._nn import float_node


def _swap(t: torch.Tensor, on: bool) -> torch.Tensor:
    return t.transpose(-1, -2) if on and t.dim() >= 2 else t


@gpu_kernel("MatMul")
def matmul(node: Node, device: torch.device) -> GpuKernel | None:
    if not float_node(node, 2):
        return None
    ta, tb = node.transpose_a, node.transpose_b
    weight = constant_input(node, 1)
    if weight is not None and weight.ndim == 2 and tb and not ta:
        # [N, K] weight read as Linear's: no transposed copy, one GEMM over all leading axes of the data
        return GpuKernel(lambda x: [F.linear(x[0], x[1])], "cublas_gemm")
    return GpuKernel(lambda x: [torch.matmul(_swap(x[0], ta), _swap(x[1], tb))], "cublas_gemm")
