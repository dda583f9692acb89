"""One-hot MatMul to Gather: a MatMul of a one-hot matrix by a constant table is a row lookup.

TensorFlow and JAX exports write an embedding as ``one_hot(ids) @ table``: ``Equal(ids[..., None], range(K))``,
a Convert to float and a MatMul by the ``[K, D]`` table (the magika package's byte classifier: 2048 ids, 257
classes, 64 columns; 0.45 ms of Equal, Convert and MatMul a call against a few microseconds of lookup). It becomes
``Gather(table, ids)``, with the one-hot's rule for ids outside ``[0, K)`` kept: their rows are zeros (Gather-8
gives zeros for indices at or past the end; a negative id is sent there by a Select, where Gather would count
it from the end).

Matched: ``MatMul(Convert(Equal(ids, c)), table)`` (Equal's operands in either order) with ``ids`` of an integer
type whose last axis has size 1, ``c`` a constant ``0, 1, ..., K - 1`` along its last axis (size-1 axes before it,
no more of them than ``ids`` has), the Convert to a float type, no ``transpose_a``, and a constant 2-D table with
K rows (columns with ``transpose_b``). The Equal and Convert stay where something else reads them.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.comparison import Less
from vinerun.ops.gather import Gather
from vinerun.ops.logical import Select
from vinerun.ops.reshape import Squeeze
from vinerun.transformations.pass_infra import InPlacePass, PassResult

_FLOATS = {"f32", "f16", "bf16", "f64"}


def one_hot_ids(equal: Node, classes: int) -> Output | None:
    """The ids ``equal`` compares with ``0 .. classes - 1`` (the one-hot pattern above), or None."""
    for ids, other in (equal.input_values(), reversed(equal.input_values())):
        if other.node.type_name != "Constant" or not ids.element_type.is_integral():
            continue
        c = np.asarray(other.node.get_value())
        shape = ids.partial_shape
        if (c.ndim == 0 or c.shape[-1] != classes or c.size != classes or shape.rank.is_dynamic
                or shape.rank.get_length() < c.ndim or not shape[-1].is_static or shape[-1].get_length() != 1):
            continue
        if np.array_equal(c.reshape(-1), np.arange(classes)):
            return ids
    return None


def _match(matmul: Node) -> tuple[Output, np.ndarray] | None:
    """(ids, the [K, D] table) when ``matmul`` multiplies a one-hot matrix by a constant table."""
    if matmul.type_name != "MatMul" or matmul.transpose_a:  # type: ignore[attr-defined]
        return None
    table = matmul.const_input(1)
    if table is None or table.ndim != 2:
        return None
    table = table.T if matmul.transpose_b else table  # type: ignore[attr-defined]
    convert = matmul.input_value(0).node
    if convert.type_name != "Convert" or convert.get_output_element_type(0).get_type_name() not in _FLOATS:
        return None
    equal = convert.input_value(0).node
    if equal.type_name != "Equal":
        return None
    ids = one_hot_ids(equal, table.shape[0])
    return None if ids is None else (ids, table)


class OneHotMatMulToGather(InPlacePass):
    """Replace each ``one_hot(ids) @ table`` with ``Gather(table, ids)`` (zeros for ids outside the table).

    >>> OneHotMatMulToGather()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = _match(node)
            if found is None:
                continue
            ids, table = found
            dtype = ids.element_type.to_dtype()
            flat = Squeeze(ids, Constant(np.array([-1], np.int64)))
            past_end = Constant(np.array(table.shape[0], dtype))
            safe = Select(Less(flat, Constant(np.array(0, dtype))), past_end, flat)
            rows = Constant(np.ascontiguousarray(table, dtype=node.get_output_element_type(0).to_dtype()))
            gather = Gather(rows, safe, Constant(np.array(0, np.int64)), name=node.friendly_name)
            replace_output_update_name(node.output(0), gather.output(0))
            node.detach()
            modified = True
        return PassResult(model, modified)
