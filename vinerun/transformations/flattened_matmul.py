"""A MatMul over flattened leading axes, unflattened after it: the same MatMul on the N-D input.

GPT-2-family models (transformers' ``Conv1D``) write a linear layer as ``x.view(-1, K) @ W + b`` and then
``.view(*x.shape[:-1], N)``: two Reshapes whose target shapes are computed from ``ShapeOf(x)`` at run time.
MatMul broadcasts over leading axes, so ``x @ W + b`` is the same product with the same rows; in a dynamic model
the two Reshapes and the shape arithmetic between them (three plan steps a layer, ~4 us; 48 of a GPT-2 decoding
step's ~200) go.

Matched: ``Reshape(y, t2)`` where ``y`` is ``MatMul(Reshape(x, t1), W)``, or that plus a constant bias of shape
``[N]`` or ``[1, N]``; ``W`` a constant ``[K, N]`` (``[N, K]`` with ``transpose_b``; no ``transpose_a``); ``x`` of
static rank >= 3 with a static last axis ``K``; ``t1`` computing to ``[-1, K]`` and ``t2`` to ``x``'s leading
dims then ``N``. The shape arithmetic is evaluated with a symbol for each dynamic dim of ``x``
(:func:`.shape_arithmetic.shape_value`). The inner
Reshape, the MatMul and the bias Add must have no other readers.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node, Output
from vinerun.ops.arithmetic import Add
from vinerun.ops.matmul import MatMul
from vinerun.transformations.pass_infra import ReplaceMatches
from vinerun.transformations.shape_arithmetic import shape_value


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
