"""ATen kernels for float reductions, Softmax / LogSoftmax, ArgMax / ArgMin and Einsum.

Each kernel covers float tensors (f32, f64, f16, bf16) and hands empty tensors to the op's
reference, which owns the identity values of empty reductions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from vinerun.errors import VinerunError
from vinerun.ir.node import Node
from vinerun.ops.einsum import parse_equation
from vinerun.ops.reduction import normalize_axes
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import float_inputs, to_numpy, to_torch


def _prod(x: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, dim=d, keepdim=keepdim)
    return x


_REDUCTIONS: dict[str, Callable[[torch.Tensor, list[int], bool], torch.Tensor]] = {
    "ReduceSum": lambda x, d, k: torch.sum(x, dim=d, keepdim=k),
    "ReduceMean": lambda x, d, k: torch.mean(x, dim=d, keepdim=k),
    "ReduceMax": lambda x, d, k: torch.amax(x, dim=d, keepdim=k),
    "ReduceMin": lambda x, d, k: torch.amin(x, dim=d, keepdim=k),
    "ReduceProd": _prod,
    "ReduceL1": lambda x, d, k: torch.linalg.vector_norm(x, ord=1, dim=d, keepdim=k),
    "ReduceL2": lambda x, d, k: torch.linalg.vector_norm(x, ord=2, dim=d, keepdim=k),
}


def _fixed_axes(node: Node) -> list[int] | None:
    """The normalized axes when they are a Constant and the rank is static (else found per call)."""
    axes, rank = node.const_input(1), node.get_input_partial_shape(0).rank
    if axes is None or rank.is_dynamic():
        return None
    try:
        return normalize_axes(axes, rank.get_length(), node)
    except VinerunError:
        return None  # the call raises it, naming the node


@cpu_kernel(*_REDUCTIONS)
def reduction(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    op, keep, reference = _REDUCTIONS[node.type_name], bool(node.keep_dims), node.evaluate
    fixed = _fixed_axes(node)

    def run(inputs):
        x, axes_in = inputs
        if x.size == 0:
            return reference(inputs)
        axes = fixed if fixed is not None else normalize_axes(axes_in, x.ndim, node)
        if not axes:
            return [np.array(x, copy=True)]
        return [to_numpy(op(to_torch(x), axes, keep))]

    return Kernel(run, f"aten_{node.type_name[len('Reduce'):].lower()}")


@cpu_kernel("Softmax", "LogSoftmax")
def softmax(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    op, axis = (torch.softmax if node.type_name == "Softmax" else torch.log_softmax), node.axis

    def run(inputs):
        x = inputs[0]
        if x.size == 0:
            return [np.array(x, copy=True)]
        return [to_numpy(op(to_torch(x), axis))]

    return Kernel(run, f"aten_{op.__name__}")


@cpu_kernel("ArgMax", "ArgMin")
def arg_reduce(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    op = torch.argmax if node.type_name == "ArgMax" else torch.argmin
    axis, keep, last, reference = node.axis, bool(node.keepdims), bool(node.select_last_index), node.evaluate

    def run(inputs):
        x = inputs[0]
        if x.size == 0:
            return reference(inputs)
        t = to_torch(x)
        if not last:
            return [to_numpy(op(t, dim=axis, keepdim=keep))]
        idx = op(torch.flip(t, dims=[axis]), dim=axis, keepdim=keep)
        return [to_numpy(t.shape[axis] - 1 - idx)]

    return Kernel(run, f"aten_{op.__name__}")


@cpu_kernel("Einsum")
def einsum(node: Node) -> Kernel | None:
    if not float_inputs(node, *range(node.get_input_size())):
        return None
    equation = parse_equation(node.equation).equation()

    def run(inputs):
        return [to_numpy(torch.einsum(equation, *[to_torch(x) for x in inputs]))]

    return Kernel(run, "aten_einsum")
