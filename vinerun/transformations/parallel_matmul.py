"""MatMuls that read the same tensor become one: ``x @ W1 (+ b1)``, ``x @ W2 (+ b2)``, ... -> ``x @ [W1 W2 ...]
(+ [b1 b2 ...])`` and a VariadicSplit of the last axis (a transformer's query, key and value projections).

One GEMM with N1 + N2 + ... columns instead of several narrow ones: fewer launches, and wider tiles for the GEMM
library at small batch. A device whose split is a view (the GPU's) pays nothing for the parts; their readers get
strided tensors. Members must multiply by constant 2-D weights with the same ``transpose_b``, inner size and
element type, and either all or none carry a constant bias along the last axis (an ``Add`` read only by them).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.arithmetic import Add
from vinerun.ops.concat_split import VariadicSplit
from vinerun.ops.matmul import MatMul
from vinerun.transformations.fusions import _FLOATS, _sole_consumer
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _bias_of(matmul: Node, n: int) -> tuple[Node, np.ndarray] | None:
    """(the Add, its bias as a ``[n]`` vector) when the MatMul's sole reader adds a constant along the last axis."""
    add = _sole_consumer(matmul)
    if add is None or add.type_name != "Add":
        return None
    other = next((v for v in add.input_values() if v.node is not matmul), None)
    if other is None or not isinstance(other.node, Constant) or other.element_type != matmul.get_output_element_type(0):
        return None
    value = other.node.get_value()
    if value.ndim == 0 or any(d != 1 for d in value.shape[:-1]) or value.shape[-1] != n:
        return None
    return add, value.reshape(n)


def _member(matmul: Node) -> tuple[tuple, tuple[Node, np.ndarray] | None] | None:
    """(what members of one group share, the MatMul's bias); None when it cannot join a group."""
    if matmul.type_name != "MatMul" or matmul.transpose_a or not isinstance(matmul.input_value(1).node, Constant):
        return None
    w = matmul.input_value(1).node.get_value()
    et = matmul.get_output_element_type(0)
    if w.ndim != 2 or et.get_type_name() not in _FLOATS or matmul.get_output_partial_shape(0).rank.is_dynamic:
        return None
    n = w.shape[0] if matmul.transpose_b else w.shape[1]
    k = w.shape[1] if matmul.transpose_b else w.shape[0]
    bias = _bias_of(matmul, n)
    source = matmul.input_value(0)
    return (id(source.node), source.index, matmul.transpose_b, k, str(w.dtype), bias is not None), bias


class ParallelMatMulFusion(InPlacePass):
    """Merge MatMuls by constant weights that read one tensor (see the module docstring)."""

    def call(self, model: Model) -> PassResult:
        groups: dict[tuple, list[tuple[Node, tuple[Node, np.ndarray] | None]]] = defaultdict(list)
        for node in model.get_ordered_ops():
            found = _member(node)
            if found is not None:
                groups[found[0]].append((node, found[1]))
        modified = False
        for members in groups.values():
            if len(members) > 1:
                self._merge(members)
                modified = True
        return PassResult(model, modified)

    @staticmethod
    def _merge(members: list[tuple[Node, tuple[Node, np.ndarray] | None]]) -> None:
        first = members[0][0]
        transpose_b = first.transpose_b
        weights = [m.input_value(1).node.get_value() for m, _ in members]
        widths = [w.shape[0] if transpose_b else w.shape[1] for w in weights]
        merged = Constant(np.concatenate(weights, axis=0 if transpose_b else 1),
                          name=f"{first.friendly_name}.merged_weights")
        y: Output = MatMul(first.input_value(0), merged.output(0), transpose_a=False, transpose_b=transpose_b,
                           name=f"{first.friendly_name}.merged").output(0)
        biases = [b for _, b in members]
        if biases[0] is not None:  # all members have one, or none (their group key says which)
            vector = np.concatenate([b[1] for b in biases])  # type: ignore[index]
            y = Add(y, Constant(vector, name=f"{first.friendly_name}.merged_bias").output(0)).output(0)
        rank = y.partial_shape.rank.get_length()
        split = VariadicSplit(y, Constant(np.array(rank - 1, np.int64)).output(0),
                              Constant(np.array(widths, np.int64)).output(0), name=f"{first.friendly_name}.split")
        for i, (m, b) in enumerate(members):
            last = b[0] if b is not None else m
            replace_output_update_name(last.output(0), split.output(i))
            last.detach()
            if b is not None:
                m.detach()
