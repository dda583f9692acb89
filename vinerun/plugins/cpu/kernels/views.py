"""Shape and slicing ops as NumPy views: Reshape, Squeeze, Unsqueeze, Slice, Split, VariadicSplit, Gather.

These layers move no data: each kernel returns a view of its input (no copy where NumPy can express the
result with strides), with every constant operand (pattern, axes, bounds, lengths, index) read once at
compile time. What a view cannot express, or an input the fast path does not cover (an out-of-range
index, a bad reshape pattern), runs the node's NumPy reference, so errors stay the reference's.
Readers never write into their inputs, so a view is as good as a copy; the plan copies a model output
that would alias a model input or a constant (:meth:`vinerun.plugins.cpu.plan.Plan.run`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._native import ValueLayout, dense_value, strided_view, view_step

#: a view's outputs: each one's layout and byte offset into the input
Views = list[tuple[ValueLayout, int]]


def _ints(node: Node, i: int) -> list[int] | None:
    """Input ``i`` as a list of ints when it is a Constant, else None."""
    v = node.const_input(i)
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def _rank(node: Node) -> int | None:
    rank = node.get_input_partial_shape(0).rank
    return rank.get_length() if rank.is_static else None


def _with_native(node: Node, kernel: Kernel) -> Kernel:
    """``kernel`` with its native form (a view of a C-contiguous input) where both shapes are static."""
    xs, ys = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    if xs.is_static and ys.is_static:
        dtype = np.dtype(node.get_input_element_type(0).to_dtype())
        kernel.native = view_step(dense_value(tuple(int(d) for d in xs.to_shape()), dtype),
                                  tuple(int(d) for d in ys.to_shape()))
    return kernel


def _with_strided_native(node: Node, kernel: Kernel, outputs: Any) -> Kernel:
    """``kernel`` with a native form that views any strided input (``outputs``: see ``_native.strided_view``)
    where every shape is static."""
    shapes = [node.get_input_partial_shape(0)] + [node.get_output_partial_shape(i)
                                                   for i in range(node.get_output_size())]
    if all(s.is_static for s in shapes) and all(s.rank.get_length() > 0 for s in shapes[1:]):
        kernel.native = strided_view(node, outputs)
    return kernel


def _static(node: Node, i: int) -> tuple[int, ...]:
    return tuple(int(d) for d in node.get_output_partial_shape(i).to_shape())


@cpu_kernel("Reshape")
def reshape(node: Node) -> Kernel | None:
    pattern = _ints(node, 1)
    if pattern is None:
        return _runtime_reshape(node)
    zeros = [i for i, d in enumerate(pattern) if d == 0] if node.special_zero else []
    if pattern.count(-1) > 1 or any(d < -1 for d in pattern):
        return None
    reference = node.evaluate

    def run(inputs: list) -> list:
        x = inputs[0]
        shape = pattern
        if zeros:
            shape = list(pattern)
            if zeros[-1] >= x.ndim:
                return reference(inputs)
            for i in zeros:
                shape[i] = x.shape[i]
        try:
            return [x.reshape(shape)]
        except ValueError:
            return reference(inputs)  # the reference's error names the shapes

    return _with_native(node, Kernel(run, "view_reshape"))


def _runtime_reshape(node: Node) -> Kernel:
    """A Reshape whose target comes at run time (a dynamic model's shape arithmetic): a view all the same."""
    special_zero, reference = bool(node.special_zero), node.evaluate

    def run(inputs: list) -> list:
        x, pattern = inputs
        shape = pattern.tolist() if type(pattern) is np.ndarray and pattern.ndim == 1 else \
            [int(d) for d in np.asarray(pattern).reshape(-1)]
        if special_zero and 0 in shape:
            if len(shape) > x.ndim and any(d == 0 for d in shape[x.ndim:]):
                return reference(inputs)
            shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        if shape.count(-1) > 1 or any(d < -1 for d in shape):
            return reference(inputs)  # its error names the pattern
        try:
            return [x.reshape(shape)]
        except ValueError:
            return reference(inputs)

    return Kernel(run, "view_reshape")


@cpu_kernel("Unsqueeze")
def unsqueeze(node: Node) -> Kernel | None:
    axes, rank = _ints(node, 1), _rank(node)
    if axes is None or rank is None:
        return None
    out_rank = rank + len(axes)
    norm = sorted(a + out_rank if a < 0 else a for a in axes)
    if len(set(norm)) != len(norm) or not all(0 <= a < out_rank for a in norm):
        return None
    index = tuple(None if i in norm else slice(None) for i in range(out_rank))

    def run(inputs: list) -> list:
        return [inputs[0][index]]

    def outputs(x: ValueLayout) -> Views:
        shape, strides, dtype = x
        dims, steps = list(shape), list(strides)
        for a in norm:  # a new dim of 1: any stride; the one a C-contiguous array would have
            dims.insert(a, 1)
            steps.insert(a, steps[a] * dims[a + 1] if a < len(steps) else dtype.itemsize)
        return [((tuple(dims), tuple(steps), dtype), 0)]

    return _with_strided_native(node, Kernel(run, "view_unsqueeze"), outputs)


@cpu_kernel("Squeeze")
def squeeze(node: Node) -> Kernel | None:
    rank = _rank(node)
    axes = _ints(node, 1) if node.get_input_size() > 1 else []
    if axes is None or rank is None or not axes:
        return None  # no axes: which dims are 1 is known only at run time; the reference handles it
    norm = tuple(sorted({a + rank if a < 0 else a for a in axes}))
    if not all(0 <= a < rank for a in norm):
        return None
    skip = bool(getattr(node, "allow_axis_skip", False))
    reference = node.evaluate

    index = tuple(0 if i in norm else slice(None) for i in range(rank))

    def run(inputs: list) -> list:
        x = inputs[0]
        shape = x.shape
        if all(shape[a] == 1 for a in norm):
            return [x[index] if len(norm) < rank else x.reshape(())]
        if not skip:
            return reference(inputs)  # its error names the axis that is not 1
        return [np.asarray(x[tuple(0 if i in norm and shape[i] == 1 else slice(None) for i in range(rank))])]

    def outputs(x: ValueLayout) -> Views | None:
        shape, strides, dtype = x
        if any(shape[a] != 1 for a in norm):
            return None
        keep = [i for i in range(rank) if i not in norm]
        return [((tuple(shape[i] for i in keep), tuple(strides[i] for i in keep), dtype), 0)]

    return _with_strided_native(node, Kernel(run, "view_squeeze"), outputs)


@cpu_kernel("Slice")
def slice_(node: Node) -> Kernel | None:
    rank = _rank(node)
    start, stop, step = _ints(node, 1), _ints(node, 2), _ints(node, 3)
    axes = _ints(node, 4) if node.get_input_size() > 4 and node.input_value(4) is not None else None
    if rank is None or start is None or stop is None or step is None:
        return None
    if node.get_input_size() > 4 and node.input_value(4) is not None and axes is None:
        return None
    win = node._windows(rank, start, stop, step, axes)  # type: ignore[attr-defined]
    index = tuple(slice(*win[i]) if i in win else slice(None) for i in range(rank))

    def run(inputs: list) -> list:
        return [inputs[0][index]]

    def outputs(x: ValueLayout) -> Views | None:
        shape, strides, dtype = x
        dims, steps, offset = list(shape), list(strides), 0
        for axis, window in win.items():
            first, stop, step = slice(*window).indices(shape[axis])
            if step <= 0:
                return None  # a reversed view: oneDNN takes no negative strides
            dims[axis] = len(range(first, stop, step))
            offset += first * strides[axis]
            steps[axis] = strides[axis] * step
        if tuple(dims) != _static(node, 0) or 0 in dims:
            return None
        return [((tuple(dims), tuple(steps), dtype), offset)]

    return _with_strided_native(node, Kernel(run, "view_slice"), outputs)


def _split_kernel(node: Node, axis: int, lengths: list[int], name: str) -> Kernel:
    bounds = np.cumsum([0] + lengths).tolist()
    rank = _rank(node)
    assert rank is not None  # checked by the factories
    pre = (slice(None),) * axis
    index = [pre + (slice(b, e),) for b, e in zip(bounds[:-1], bounds[1:], strict=True)]

    def run(inputs: list) -> list:
        x = inputs[0]
        return [x[i] for i in index]

    def outputs(x: ValueLayout) -> Views | None:
        shape, strides, dtype = x
        if 0 in lengths:
            return None
        views = []
        for begin, length in zip(bounds[:-1], lengths, strict=True):
            dims = list(shape)
            dims[axis] = length
            views.append(((tuple(dims), strides, dtype), begin * strides[axis]))
        return views

    return _with_strided_native(node, Kernel(run, name), outputs)


def _static_axis(node: Node) -> tuple[int, int] | None:
    """(normalized axis, its static size) of a split node, when both are known."""
    rank, axis = _rank(node), _ints(node, 1)
    if rank is None or axis is None or len(axis) != 1:
        return None
    a = axis[0] + rank if axis[0] < 0 else axis[0]
    if not 0 <= a < rank:
        return None
    dim = node.get_input_partial_shape(0)[a]
    return (a, dim.get_length()) if dim.is_static else None


@cpu_kernel("Split")
def split(node: Any) -> Kernel | None:
    found = _static_axis(node)
    if found is None or node.num_splits <= 0 or found[1] % node.num_splits:
        return None
    axis, size = found
    return _split_kernel(node, axis, [size // node.num_splits] * node.num_splits, "view_split")


@cpu_kernel("VariadicSplit")
def variadic_split(node: Node) -> Kernel | None:
    found, lengths = _static_axis(node), _ints(node, 2)
    if found is None or lengths is None or lengths.count(-1) > 1 or any(v < -1 for v in lengths):
        return None
    axis, size = found
    if -1 in lengths:
        rest = size - sum(v for v in lengths if v != -1)
        if rest < 0:
            return None
        lengths = [rest if v == -1 else v for v in lengths]
    if sum(lengths) != size:
        return None
    return _split_kernel(node, axis, lengths, "view_split")


def gather_scalar(node: Any) -> Kernel | None:
    """Gather of one constant scalar index: a basic-indexing view (``x[:, :, i]``).

    Not registered itself: :func:`.movement.gather` tries it first.
    """
    index, rank, axis = node.const_input(1), _rank(node), _ints(node, 2)
    if (index is None or np.ndim(index) != 0 or rank is None or axis is None or len(axis) != 1
            or getattr(node, "batch_dims", 0) != 0):
        return None
    a = axis[0] + rank if axis[0] < 0 else axis[0]
    if not 0 <= a < rank:
        return None
    i = int(index)
    pre = (slice(None),) * a
    reference = node.evaluate

    def run(inputs: list) -> list:
        x = inputs[0]
        size = x.shape[a]
        if not -size <= i < size:
            return reference(inputs)  # out of range: the reference's zeros
        return [x[pre + (i,)] if rank > 1 else np.asarray(x[i])]

    def outputs(x: ValueLayout) -> Views | None:
        shape, strides, dtype = x
        if not -shape[a] <= i < shape[a]:
            return None
        keep = [d for d in range(rank) if d != a]
        return [((tuple(shape[d] for d in keep), tuple(strides[d] for d in keep), dtype),
                 (i % shape[a]) * strides[a])]

    return _with_strided_native(node, Kernel(run, "view_gather"), outputs)
