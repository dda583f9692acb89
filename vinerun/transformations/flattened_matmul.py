"""A MatMul over flattened leading axes, unflattened after it: the same MatMul on the N-D input.

GPT-2-family models (transformers' ``Conv1D``) write a linear layer as ``x.view(-1, K) @ W + b`` and then
``.view(*x.shape[:-1], N)``: two Reshapes whose target shapes are computed from ``ShapeOf(x)`` at run time.
MatMul broadcasts over leading axes, so ``x @ W + b`` is the same product with the same rows; in a dynamic model
the two Reshapes and the shape arithmetic between them (three plan steps a layer, ~4 us; 48 of a GPT-2 decoding
step's ~200) go.

Matched: ``Reshape(y, t2)`` where ``y`` is ``MatMul(Reshape(x, t1), W)``, or that plus a constant bias of shape
``[N]`` or ``[1, N]``; ``W`` a constant ``[K, N]`` (``[N, K]`` with ``transpose_b``; no ``transpose_a``); ``x`` of
static rank >= 3 with a static last axis ``K``; ``t1`` computing to ``[-1, K]`` and ``t2`` to ``x``'s leading
dims then ``N``. The shape arithmetic (ShapeOf, Gather, Slice, Squeeze, Unsqueeze, Concat, Convert over
integer constants) is evaluated with a symbol for each dynamic dim of a tensor (:func:`shape_value`). The inner
Reshape, the MatMul and the bias Add must have no other readers.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node, Output
from vinerun.ops.arithmetic import Add
from vinerun.ops.matmul import MatMul
from vinerun.transformations.pass_infra import ReplaceMatches

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


def _single_reader(out: Output) -> bool:
    return len(out.get_target_inputs()) == 1


def _bias(add: Node) -> tuple[Output, Output] | None:
    """(the MatMul output, the constant bias) of ``add``, a MatMul plus a constant."""
    for i in (0, 1):
        if add.const_input(i) is not None and add.input_value(1 - i).node.type_name == "MatMul":
            return add.input_value(1 - i), add.input_value(i)
    return None


#: (the outer Reshape, x, the MatMul, the bias, the bias Add)
_Match = tuple[Node, Output, Node, "Output | None", "Node | None"]


def _match(reshape: Node) -> _Match | None:
    """(the Reshape, x, the MatMul, the bias, the bias Add) where ``reshape`` unflattens a MatMul of flattened
    ``x``."""
    if reshape.type_name != "Reshape":
        return None
    y, bias, add = reshape.input_value(0), None, None
    if y.node.type_name == "Add":
        add = y.node
        found = _bias(add)
        if found is None or not _single_reader(y):
            return None
        y, bias = found
    matmul = y.node
    w = matmul.const_input(1)
    if (matmul.type_name != "MatMul" or matmul.transpose_a or w is None or w.ndim != 2  # type: ignore[attr-defined]
            or not _single_reader(y)):
        return None
    k, n = w.shape[::-1] if matmul.transpose_b else w.shape  # type: ignore[attr-defined]
    if bias is not None and np.shape(bias.node.get_value()) not in ((n,), (1, n)):
        return None  # a bias that broadcasts over more than the last axis
    flat = matmul.input_value(0).node
    if flat.type_name != "Reshape" or not _single_reader(flat.output(0)):
        return None
    x = flat.input_value(0)
    shape = x.partial_shape
    if shape.rank.is_dynamic or shape.rank.get_length() < 3 or not shape[-1].is_static or shape[-1].get_length() != k:
        return None
    t1, t2 = shape_value(flat.input_value(1)), shape_value(reshape.input_value(1))
    lead = [d.get_length() if d.is_static else (x, i) for i, d in enumerate(shape)][:-1]
    if t1 is None or t2 is None or t1[0] != [-1, k] or t2[0] != [*lead, n]:
        return None
    if 0 in t2[0] and reshape.special_zero:  # type: ignore[attr-defined] - a 0 there copies y's dim, not x's
        return None
    return reshape, x, matmul, bias, add


class FlattenedMatMulUnflattening(ReplaceMatches):
    """Replace each ``Reshape(Reshape(x, [-1, K]) @ W (+ b), [*x.shape[:-1], N])`` with ``x @ W (+ b)``.

    >>> FlattenedMatMulUnflattening()(model).modified
    True
    """

    def __init__(self) -> None:
        super().__init__(_unflattened)

    def match(self, node: Node) -> _Match | None:
        return _match(node)

    def covered(self, match: _Match) -> tuple[Node, list[Node]]:
        reshape, _, matmul, _, add = match
        flat = matmul.input_value(0).node
        return reshape, [reshape, *([add] if add is not None else []), matmul, flat]


def _unflattened(match: _Match) -> Node:
    """``x @ W (+ b)`` with the MatMul's and the Add's names."""
    _, x, matmul, bias, add = match
    out: Node = MatMul(x, matmul.input_value(1), transpose_b=matmul.transpose_b,  # type: ignore[attr-defined]
                       name=matmul.friendly_name)
    if bias is not None and add is not None:
        out = Add(out, bias, name=add.friendly_name)
    return out
