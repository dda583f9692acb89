"""View kernels: Reshape, Squeeze, Unsqueeze and Identity return torch views of their input (``view=True``).

A static output shape is taken at compile time; otherwise the shape is resolved per run from the input's shape
(metadata, no synchronization) and the constant operand. A shape / axes operand computed in the graph is read on
the host (``host=True``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.shape import Dimension
from vinerun.ops._shape_helpers import normalize_axes
from vinerun.ops.reshape import _unsqueezed, reshape_target
from vinerun.plugins.gpu.kernels import GpuKernel, gpu_kernel
from vinerun.plugins.gpu.kernels._operands import IntOperand, int_operand, static_shape

ShapeFn = Callable[[list[int], list[int]], list[int]]


def _view_kernel(node: Node, shape_of: ShapeFn, operand: IntOperand | None, name: str) -> GpuKernel:
    """``x.reshape(shape_of(x.shape, operand values))``, or the static output shape."""
    static = static_shape(node)
    if static is not None and (operand is None or not operand.host):
        return GpuKernel(lambda x: [x[0].reshape(static)], f"gpu_{name}", view=True)

    def run(x: list) -> list:
        values = [] if operand is None else operand.get(x)
        return [x[0].reshape(shape_of(list(x[0].shape), values))]

    return GpuKernel(run, f"gpu_{name}", host=operand is not None and operand.host, view=True)


@gpu_kernel("Reshape")
def reshape(node: Node, device: torch.device) -> GpuKernel | None:
    special_zero = node.special_zero

    def shape_of(dims: list[int], pattern: list[int]) -> list[int]:
        out = reshape_target([Dimension(d) for d in dims], pattern, special_zero)
        return [d.get_length() for d in out]

    return _view_kernel(node, shape_of, int_operand(node, 1), "reshape")


@gpu_kernel("Squeeze")
def squeeze(node: Node, device: torch.device) -> GpuKernel | None:
    skip = getattr(node, "allow_axis_skip", False)

    def shape_of(dims: list[int], axes: list[int]) -> list[int]:
        if not axes:
            return [d for d in dims if d != 1]
        axes = normalize_axes(axes, len(dims))
        if skip:
            axes = [a for a in axes if dims[a] == 1]
        for a in axes:
            if dims[a] != 1:
                raise ValidationError(f"cannot squeeze axis {a}: its dimension is {dims[a]}, not 1")
        return [d for i, d in enumerate(dims) if i not in axes]

    return _view_kernel(node, shape_of, int_operand(node, 1), "squeeze")


@gpu_kernel("Unsqueeze")
def unsqueeze(node: Node, device: torch.device) -> GpuKernel | None:
    def shape_of(dims: list[int], axes: list[int]) -> list[int]:
        return [d.get_length() for d in _unsqueezed([Dimension(d) for d in dims], axes)]

    return _view_kernel(node, shape_of, int_operand(node, 1), "unsqueeze")


@gpu_kernel("Identity")
def identity(node: Node, device: torch.device) -> GpuKernel | None:
    return GpuKernel(lambda x: [x[0]], "gpu_identity", view=True)
