"""Data-movement kernels: Transpose, Concat, Split, VariadicSplit, Slice, StridedSlice, Tile and Broadcast.

Splits and slices return views of their input (``view=True``; a negative step copies, through ``flip``);
Transpose, Tile and Broadcast write a new contiguous tensor. Windows, axes and shapes are resolved per run with
the references' own helpers from the input's shape and the constant operands (operands computed in the graph
are read on the host: ``host=True``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.shape import PartialShape
from vinerun.ops._base import normalize_axis
from vinerun.ops.broadcast import _explicit_shape, _numpy_target
from vinerun.ops.concat_split import resolve_split_lengths
from vinerun.ops.transpose import check_permutation
from vinerun.plugins.gpu.kernels import GpuKernel, gpu_kernel, torch_types
from vinerun.plugins.gpu.kernels._operands import IntOperand, any_host, int_operand

Index = list[slice | int | None]


def fresh(x: torch.Tensor) -> torch.Tensor:
    """A contiguous copy (``contiguous()`` would return ``x`` itself when it already is)."""
    return x.clone(memory_format=torch.contiguous_format)


def apply_index(x: torch.Tensor, index: Index) -> torch.Tensor:
    """``x[index]`` with NumPy's meaning of negative slice steps (torch has none: the window is flipped)."""
    items: list[Any] = []
    flips: list[int] = []
    axis = 0
    for item in index:
        if isinstance(item, slice):
            start, stop, step = item.indices(x.shape[axis])
            if step < 0:
                n = len(range(start, stop, step))
                flips.append(len([i for i in items if not isinstance(i, int)]))
                item = slice(start + (n - 1) * step, start + 1, -step) if n else slice(0, 0)
            else:
                item = slice(start, stop, step)
        items.append(item)
        axis += item is not None
    y = x[tuple(items)]
    return y.flip(flips) if flips else y


def _negative_steps(op: IntOperand | None) -> bool:
    """Whether a step operand may hold a negative step (unknown counts as may)."""
    return op is not None and (op.value is None or any(s < 0 for s in op.value))


@gpu_kernel("Slice")
def slice_(node: Node, device: torch.device) -> GpuKernel | None:
    start, stop, step, axes = (int_operand(node, i) for i in (1, 2, 3, 4))

    def run(x: list) -> list:
        win = node._windows(x[0].ndim, start.get(x), stop.get(x), step.get(x), None if axes is None else axes.get(x))
        return [apply_index(x[0], [slice(*win[i]) if i in win else slice(None) for i in range(x[0].ndim)])]

    return GpuKernel(run, "gpu_slice", host=any_host(start, stop, step, axes), view=not _negative_steps(step))


@gpu_kernel("StridedSlice")
def strided_slice(node: Node, device: torch.device) -> GpuKernel | None:
    begin, end, stride = (int_operand(node, i) for i in (1, 2, 3))

    def run(x: list) -> list:
        t = x[0]
        b, e = begin.get(x), end.get(x)
        s = [] if stride is None else stride.get(x)
        index: Index = []
        for kind, axis, i in node._plan(t.ndim, len(b)):
            if kind == "all":
                index.append(slice(None))
            elif kind == "new":
                index.append(None)
            elif kind == "shrink":
                if not -t.shape[axis] <= b[i] < t.shape[axis]:
                    raise ValidationError(f"shrink index {b[i]} is out of range for axis {axis} of size "
                                          f"{t.shape[axis]}")
                index.append(b[i])
            else:
                index.append(node._window(i, b, e, s))
        return [apply_index(t, index)]

    return GpuKernel(run, "gpu_strided_slice", host=any_host(begin, end, stride), view=not _negative_steps(stride))


def _axis(op: IntOperand, x: list, rank: int, node: Node) -> int:
    return normalize_axis(op.get(x)[0], rank, node)


def _parts(t: torch.Tensor, axis: int, lengths: list[int]) -> list[torch.Tensor]:
    bounds = np.cumsum([0] + lengths).tolist()
    return [t.narrow(axis, b, n) for b, n in zip(bounds, lengths, strict=False)]


@gpu_kernel("Split")
def split(node: Node, device: torch.device) -> GpuKernel | None:
    axis_op, n = int_operand(node, 1), node.num_splits

    def run(x: list) -> list:
        t = x[0]
        axis = _axis(axis_op, x, t.ndim, node)
        if t.shape[axis] % n:
            raise ValidationError(f"dimension {t.shape[axis]} of axis {axis} does not split into {n} equal parts")
        return _parts(t, axis, [t.shape[axis] // n] * n)

    return GpuKernel(run, "gpu_split", host=axis_op.host, view=True)


@gpu_kernel("VariadicSplit")
def variadic_split(node: Node, device: torch.device) -> GpuKernel | None:
    axis_op, lengths_op = int_operand(node, 1), int_operand(node, 2)

    def run(x: list) -> list:
        t = x[0]
        axis = _axis(axis_op, x, t.ndim, node)
        return _parts(t, axis, resolve_split_lengths(lengths_op.get(x), t.shape[axis]))

    return GpuKernel(run, "gpu_variadic_split", host=any_host(axis_op, lengths_op), view=True)


@gpu_kernel("Concat")
def concat(node: Node, device: torch.device) -> GpuKernel | None:
    if not torch_types(node):
        return None
    axis = node.axis

    def run(x: list) -> list:
        return [torch.cat(x, dim=normalize_axis(axis, x[0].ndim, node))]

    return GpuKernel(run, "gpu_concat")


@gpu_kernel("Transpose")
def transpose(node: Node, device: torch.device) -> GpuKernel | None:
    order_op = int_operand(node, 1)

    def run(x: list) -> list:
        return [fresh(x[0].permute(check_permutation(order_op.get(x), x[0].ndim)))]

    return GpuKernel(run, "gpu_transpose", host=order_op.host)


@gpu_kernel("Tile")
def tile(node: Node, device: torch.device) -> GpuKernel | None:
    reps_op = int_operand(node, 1)

    def run(x: list) -> list:
        t, reps = x[0], reps_op.get(x)
        reps = [1] * (t.ndim - len(reps)) + reps
        return [t.repeat(reps) if reps else fresh(t)]

    return GpuKernel(run, "gpu_tile", host=reps_op.host)


def _broadcast_shape(mode: str, shape: tuple[int, ...], target: list[int], mapping: list[int] | None,
                     ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the input viewed for ``expand``, the output shape), as the reference broadcasts."""
    if mode == "bidirectional":
        return shape, tuple(np.broadcast_shapes(shape, tuple(target)))
    if mode == "explicit":
        return _explicit_shape(shape, target, mapping or []), tuple(target)
    _numpy_target(PartialShape(list(shape)), PartialShape(target))
    return shape, tuple(target)


@gpu_kernel("Broadcast")
def broadcast(node: Node, device: torch.device) -> GpuKernel | None:
    target_op, mapping_op, mode = int_operand(node, 1), int_operand(node, 2), node.mode
    if mode not in ("numpy", "bidirectional", "explicit"):
        return None

    def run(x: list) -> list:
        t = x[0]
        mapping = None if mapping_op is None else mapping_op.get(x)
        view, shape = _broadcast_shape(mode, tuple(t.shape), target_op.get(x), mapping)
        return [fresh(t.reshape(view).expand(shape))]

    return GpuKernel(run, "gpu_broadcast", host=any_host(target_op, mapping_op))
