"""Element-wise kernels on ATen: arithmetic and activations for float tensors."""

from __future__ import annotations

import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch

_FLOAT = ("f32", "f16", "bf16", "f64")

_BINARY = {"Add": torch.add, "Subtract": torch.sub, "Multiply": torch.mul, "Maximum": torch.maximum,
           "Minimum": torch.minimum}
_UNARY = {"Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Exp": torch.exp,
          "Abs": torch.abs, "Sqrt": torch.sqrt, "Erf": torch.erf, "Negative": torch.neg}


def _float_inputs(node: Node) -> bool:
    return all(o.element_type.get_type_name() in _FLOAT for o in node.input_values())


@cpu_kernel(*_BINARY)
def binary(node: Node) -> Kernel | None:
    if not _float_inputs(node) or node.get_attributes().get("auto_broadcast", "numpy") != "numpy":
        return None
    op = _BINARY[node.type_name]

    def run(inputs):
        return [to_numpy(op(to_torch(inputs[0]), to_torch(inputs[1])))]

    return Kernel(run, f"aten_{op.__name__}")


@cpu_kernel("Divide")
def divide(node: Node) -> Kernel | None:
    if not _float_inputs(node):
        return None

    def run(inputs):
        return [to_numpy(torch.div(to_torch(inputs[0]), to_torch(inputs[1])))]

    return Kernel(run, "aten_div")


@cpu_kernel(*_UNARY)
def unary(node: Node) -> Kernel | None:
    if not _float_inputs(node):
        return None
    op = _UNARY[node.type_name]

    def run(inputs):
        return [to_numpy(op(to_torch(inputs[0])))]

    return Kernel(run, f"aten_{op.__name__}")


@cpu_kernel("MatMul")
def matmul(node: Node) -> Kernel | None:
    if not _float_inputs(node):
        return None
    ta, tb = node.transpose_a, node.transpose_b

    def run(inputs):
        a, b = to_torch(inputs[0]), to_torch(inputs[1])
        if ta and a.dim() >= 2:
            a = a.transpose(-1, -2)
        if tb and b.dim() >= 2:
            b = b.transpose(-1, -2)
        return [to_numpy(torch.matmul(a, b))]

    return Kernel(run, "aten_matmul")
