"""Shape arithmetic evaluated over symbols: what a ShapeOf-derived integer value is, for passes that must know
that a computed target shape is, say, ``x``'s leading dims then 768 (exporters compute reshape targets at run
time from ``ShapeOf``; a dynamic dim stands as ``(tensor, axis)``).

Followed: Constant, ShapeOf, Convert, Concat (axis 0), Unsqueeze / Squeeze of one element, Gather and Slice with
constant indices on axis 0.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node, Output

#: a dim of a shape value: a length, or (tensor, axis) for a dynamic axis of that tensor
Dim = int | tuple[Output, int]
#: how many producers deep the shape arithmetic is followed
_DEPTH = 12


def shape_value(value: Output, depth: int = 0) -> tuple[list[Dim], bool] | None:
    """(the dims an integer shape computation gives, whether it is a scalar), or None where ``value`` is not shape
    arithmetic this follows.

    >>> shape_value(concat_of_shape_of_x_and_768)  # doctest: +SKIP
    ([(x, 0), (x, 1), 768], False)
    """
    node, kind = value.node, value.node.type_name
    if depth > _DEPTH:
        return None
    if kind == "Constant":
        a = np.asarray(node.get_value())
        return ([int(v) for v in a.reshape(-1)], a.ndim == 0) if a.ndim <= 1 and a.dtype.kind in "iu" else None
    if kind == "ShapeOf":
        src = node.input_value(0)
        shape = src.partial_shape
        if shape.rank.is_dynamic:
            return None
        return [d.get_length() if d.is_static else (src, i) for i, d in enumerate(shape)], False
    if kind == "Convert":
        return shape_value(node.input_value(0), depth + 1) if value.element_type.is_integral() else None
    if kind == "Concat":
        dims: list[Dim] = []
        for part in node.input_values():
            got = shape_value(part, depth + 1)
            if got is None or got[1]:
                return None
            dims += got[0]
        return (dims, False) if node.axis in (0, -1) else None  # type: ignore[attr-defined]
    if kind in ("Unsqueeze", "Squeeze"):
        got = shape_value(node.input_value(0), depth + 1)
        if got is None or (kind == "Unsqueeze") != got[1] or len(got[0]) != 1:
            return None  # a scalar made 1-D, or a one-element 1-D made scalar
        return got[0], kind == "Squeeze"
    if kind == "Gather":
        return _gathered(node, depth)
    if kind == "Slice":
        return _sliced(node, depth)
    return None


def _gathered(node: Node, depth: int) -> tuple[list[Dim], bool] | None:
    got, indices, axis = shape_value(node.input_value(0), depth + 1), node.const_input(1), node.const_input(2)
    if got is None or got[1] or indices is None or axis is None or int(axis) not in (0, -1) or node.batch_dims:
        return None
    dims, picks = got[0], np.asarray(indices)
    if picks.ndim > 1 or not all(-len(dims) <= int(i) < len(dims) for i in picks.reshape(-1)):
        return None
    return [dims[int(i)] for i in picks.reshape(-1)], picks.ndim == 0


def _sliced(node: Node, depth: int) -> tuple[list[Dim], bool] | None:
    got = shape_value(node.input_value(0), depth + 1)
    bounds = [node.const_input(i) for i in range(1, node.get_input_size())]
    if got is None or got[1] or any(b is None for b in bounds):
        return None
    start, stop, step, *axes = (np.asarray(b).reshape(-1) for b in bounds)
    if len(start) != 1 or (axes and int(axes[0][0]) not in (0, -1)) or int(step[0]) == 0:
        return None
    big = 2**62  # ONNX writes INT64_MAX for "to the end": Python's slice clamps it
    return got[0][slice(max(min(int(start[0]), big), -big), max(min(int(stop[0]), big), -big), int(step[0]))], False
