"""LSTM cell fusion: an LSTM step written out in element-wise ops becomes one LSTMCell (after OpenVINO's
LSTMCellFusion).

Exporters unroll ``torch.nn.LSTMCell`` (silero-vad's decoder) into some fifteen nodes: two matrix products
with their biases, a split into four gates, three Sigmoids and a Tanh, and the state update. Each costs a
kernel call; as one LSTMCell the CPU runs a single matrix product with the gate activations fused.

Matched, exactly: ``X @ W^T (+ b) + H @ R^T (+ b)`` (MatMuls by constant 2-D weights, constant biases of
shape [4H] or [1, 4H], added in any order) split along the last axis into four parts of the hidden size H;
``c' = sigmoid(f) * C + sigmoid(i) * tanh(g)`` and ``h' = sigmoid(o) * tanh(c')``, all f32. Which part is
which gate follows from its role (the one multiplied with the old state C is f, ...), not its position.
Every intermediate value has a single reader; ``h'`` and ``c'`` may have several.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.rnn_cells import LSTMCell
from vinerun.transformations.pass_infra import InPlacePass, PassResult

_BROADCASTS = ("numpy", "none")


@dataclass
class CellMatch:
    """A written-out LSTM cell: its inputs, weights per split part, each part's gate and the nodes it covers."""

    x: Output
    h: Output
    c: Output
    w: np.ndarray  # [4H, I], rows in split order
    r: np.ndarray  # [4H, H]
    b: np.ndarray  # [4H]
    gates: str  # the gate ("f", "i", "c" or "o") of each split part, in split order
    h_new: Node
    c_new: Node
    nodes: list[Node]

    def fico(self, a: np.ndarray) -> np.ndarray:
        """``a``'s gate blocks (split order) in OpenVINO's order f, i, c, o."""
        parts = np.split(a, 4, axis=0)
        return np.ascontiguousarray(np.concatenate([parts[self.gates.index(g)] for g in "fico"], axis=0))


def _readers(out: Output) -> list[Node]:
    return [i.node for i in out.get_target_inputs()]


def _only_reader(node: Node) -> Node | None:
    """The single node reading ``node``'s single output, else None."""
    if node.get_output_size() != 1:
        return None
    readers = _readers(node.output(0))
    return readers[0] if len(readers) == 1 else None


def _is(node: Node, type_name: str) -> bool:
    if node.type_name != type_name:
        return False
    return type_name not in ("Add", "Multiply") or node.auto_broadcast in _BROADCASTS  # type: ignore[attr-defined]


def _other(node: Node, out: Output) -> Output | None:
    """The operand of binary ``node`` that is not ``out`` (None unless exactly one operand is ``out``)."""
    a, b = node.input_values()
    if a == b:
        return None
    return b if a == out else a if b == out else None


def _f32_2d(out: Output) -> bool:
    shape = out.partial_shape
    return out.element_type.get_type_name() == "f32" and shape.rank.is_static and shape.rank.get_length() == 2


def _static(out: Output, axis: int) -> int | None:
    d = out.partial_shape[axis]
    return d.get_length() if d.is_static else None


def _linear(sum_out: Output, width: int) -> tuple[list[tuple[Output, np.ndarray, Node]], np.ndarray, list[Node]] | None:
    """The terms of the Add tree making ``sum_out``: ([(input, weight [width, K], MatMul)], bias sum, the Adds),
    or None unless it is exactly two MatMuls by constants and constant biases."""
    products: list[tuple[Output, np.ndarray, Node]] = []
    bias = np.zeros(width, np.float64)
    adds: list[Node] = []
    stack = [sum_out.node]
    while stack:
        node = stack.pop()
        if _is(node, "Add"):
            adds.append(node)
            for v in node.input_values():
                if v.node.type_name == "Constant":
                    b = np.asarray(v.node.get_value())
                    if b.dtype != np.float32 or b.shape not in ((width,), (1, width)):
                        return None
                    bias += b.reshape(-1)
                elif _only_reader(v.node) is node:
                    stack.append(v.node)
                else:
                    return None
        elif node.type_name == "MatMul" and not node.transpose_a:  # type: ignore[attr-defined]
            w = node.const_input(1)
            x = node.input_value(0)
            if w is None or w.ndim != 2 or w.dtype != np.float32 or not _f32_2d(x):
                return None
            w = w if node.transpose_b else w.T  # type: ignore[attr-defined]
            if w.shape[0] != width or _static(x, 1) not in (None, w.shape[1]):
                return None
            products.append((x, np.ascontiguousarray(w), node))
        else:
            return None
    if len(products) != 2:
        return None
    return products, bias.astype(np.float32), adds


def _gates(split: Node) -> tuple[dict[str, Node], list[str]] | None:
    """Each split part's activation (three Sigmoids, one Tanh, each the single reader of its part, each read
    by one Multiply): ({"sigmoid k" or "tanh": activation}, the key per part)."""
    acts: dict[str, Node] = {}
    keys: list[str] = []
    for k in range(4):
        readers = _readers(split.output(k))
        if len(readers) != 1 or readers[0].type_name not in ("Sigmoid", "Tanh"):
            return None
        act = readers[0]
        mul = _only_reader(act)
        if mul is None or not _is(mul, "Multiply"):
            return None
        key = "tanh" if act.type_name == "Tanh" else f"sigmoid {k}"
        if key in acts:
            return None
        acts[key] = act
        keys.append(key)
    return (acts, keys) if "tanh" in acts else None


def match_lstm_cell(split: Node) -> CellMatch | None:
    """The LSTM cell whose gates ``split`` cuts, or None."""
    if split.type_name not in ("Split", "VariadicSplit") or split.get_output_size() != 4:
        return None
    total = split.input_value(0)
    axis = split.const_input(1)
    if not _f32_2d(total) or axis is None or np.asarray(axis).size != 1:
        return None
    if int(np.asarray(axis).reshape(-1)[0]) not in (1, -1):  # the last axis of the 2-D sum
        return None
    width = _static(total, 1)
    if width is None or width % 4 or any(_static(split.output(k), 1) != width // 4 for k in range(4)):
        return None
    hidden = width // 4
    found = _gates(split)
    if found is None:
        return None
    acts, keys = found
    # i: the Sigmoid multiplied with tanh(g)
    g = acts["tanh"]
    mul_ig = _only_reader(g)
    i_out = _other(mul_ig, g.output(0)) if mul_ig is not None else None
    i_key = next((k for k, a in acts.items() if k != "tanh" and i_out == a.output(0)), None)
    if mul_ig is None or i_key is None:
        return None
    # c' = f * C + i * g, f: the other Sigmoid of that product
    c_new = _only_reader(mul_ig)
    if c_new is None or not _is(c_new, "Add"):
        return None
    mul_fc = _other(c_new, mul_ig.output(0))
    if mul_fc is None or not _is(mul_fc.node, "Multiply") or _only_reader(mul_fc.node) is not c_new:
        return None
    f_key = next((k for k, a in acts.items() if k not in ("tanh", i_key) and _only_reader(a) is mul_fc.node), None)
    if f_key is None:
        return None
    c = _other(mul_fc.node, acts[f_key].output(0))
    # h' = o * tanh(c')
    o_key = next(k for k in acts if k not in ("tanh", i_key, f_key))
    h_new = _only_reader(acts[o_key])
    tanh_c = _other(h_new, acts[o_key].output(0)) if h_new is not None else None
    if (c is None or h_new is None or tanh_c is None or tanh_c.node.type_name != "Tanh"
            or tanh_c.node.input_value(0) != c_new.output(0) or _only_reader(tanh_c.node) is not h_new):
        return None
    if not _f32_2d(c) or _static(c, 1) != hidden or _only_reader(total.node) is not split:
        return None
    terms = _linear(total, width)
    if terms is None:
        return None
    products, bias, adds = terms
    (x, w, mm_x), (h, r, mm_h) = _order(products, hidden, c)
    if r.shape[1] != hidden or _static(h, 1) not in (None, hidden):
        return None
    batches = {d for d in (_static(v, 0) for v in (x, h, c, total)) if d is not None}
    if len(batches) > 1:  # static batch sizes that differ: a broadcast LSTMCell does not express
        return None
    roles = {i_key: "i", f_key: "f", o_key: "o", "tanh": "c"}
    nodes = [h_new, tanh_c.node, c_new, mul_fc.node, mul_ig, *acts.values(), split, *adds, mm_x, mm_h]
    return CellMatch(x, h, c, w, r, bias, "".join(roles[k] for k in keys), h_new, c_new, nodes)


def _order(products: list[tuple[Output, np.ndarray, Node]], hidden: int,
           c: Output) -> list[tuple[Output, np.ndarray, Node]]:
    """(the X term, the H term). H's width is the hidden size; when both are, the one read from the node that
    also gives C (a state tensor both are taken from), else the second."""
    a, b = products
    if a[1].shape[1] != hidden:
        return [a, b]
    if b[1].shape[1] != hidden:
        return [b, a]
    def sources(v: Output) -> set[int]:
        return {id(s.node) for s in v.node.input_values() if s is not None and s.node.type_name != "Constant"}

    state = sources(c)
    return [b, a] if sources(a[0]) & state and not sources(b[0]) & state else [a, b]


class LSTMCellFusion(InPlacePass):
    """Replace each written-out LSTM cell with one LSTMCell (weights reordered to f, i, c, o).

    >>> LSTMCellFusion()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = match_lstm_cell(node)
            if found is None:
                continue
            hidden = found.r.shape[1]
            cell = LSTMCell(found.x, found.h, found.c, Constant(found.fico(found.w)), Constant(found.fico(found.r)),
                            Constant(found.fico(found.b)), hidden_size=hidden, name=found.h_new.friendly_name)
            replace_output_update_name(found.h_new.output(0), cell.output(0))
            replace_output_update_name(found.c_new.output(0), cell.output(1))
            for n in found.nodes:
                n.detach()
            modified = True
        return PassResult(model, modified)
