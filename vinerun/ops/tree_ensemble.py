"""ai.onnx.ml TreeEnsemble (ONNX-only, version "onnx"): a forest of decision trees, one row at a time."""

from __future__ import annotations

import numpy as np
import torch

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape

BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, BRANCH_MEMBER = range(7)
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
POST_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


def _softmax(y: np.ndarray, skip_zero: bool) -> np.ndarray:
    mask = (y != 0) if skip_zero else np.ones_like(y, dtype=bool)
    shifted = np.where(mask, y - np.max(np.where(mask, y, -np.inf), axis=1, keepdims=True), 0)
    e = np.where(mask, np.exp(shifted), 0)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total != 0)


def post_transform(y: np.ndarray, how: str) -> np.ndarray:
    if how == "SOFTMAX":
        return _softmax(y, False)
    if how == "SOFTMAX_ZERO":
        return _softmax(y, True)
    if how == "LOGISTIC":
        return 1.0 / (1.0 + np.exp(-y))
    if how == "PROBIT":
        return np.sqrt(2.0) * torch.special.erfinv(torch.from_numpy(2.0 * y - 1.0)).numpy()
    return y


@register_op
class TreeEnsemble(Node):
    """Evaluates ``tree_roots`` on each row of X [N, F]; leaves add ``leaf_weights`` to ``leaf_targetids``.

    Node ``i`` tests ``X[:, nodes_featureids[i]]`` against ``nodes_splits[i]`` with ``nodes_modes[i]``
    (LEQ, LT, GTE, GT, EQ, NEQ, MEMBER); on true it goes to ``nodes_truenodeids[i]`` (a leaf index if
    ``nodes_trueleafs[i]``), else to the false side. NaN features go to the true side where
    ``nodes_missing_value_tracks_true[i]``. Trees combine with ``aggregate_function``, then
    ``post_transform`` applies. The output has X's element type and shape [N, n_targets].
    """

    type_name, version, num_inputs = "TreeEnsemble", "onnx", (1, 1)
    aggregate_function = Attr("str", "SUM")
    post_transform = Attr("str", "NONE")
    n_targets = Attr("int")
    tree_roots = Attr("ints")
    nodes_featureids = Attr("ints")
    nodes_modes = Attr("ints")
    nodes_splits = Attr("floats")
    nodes_truenodeids = Attr("ints")
    nodes_trueleafs = Attr("ints")
    nodes_falsenodeids = Attr("ints")
    nodes_falseleafs = Attr("ints")
    nodes_missing_value_tracks_true = Attr("ints", None)
    membership_values = Attr("floats", None)
    leaf_targetids = Attr("ints")
    leaf_weights = Attr("floats")

    def infer(self) -> list:
        if self.aggregate_function not in AGGREGATES:
            raise ValidationError(f"aggregate_function must be one of {AGGREGATES}, got {self.aggregate_function!r}")
        if self.post_transform not in POST_TRANSFORMS:
            raise ValidationError(f"post_transform must be one of {POST_TRANSFORMS}, got {self.post_transform!r}")
        n = len(self.nodes_featureids)
        for name in ("nodes_modes", "nodes_splits", "nodes_truenodeids", "nodes_trueleafs", "nodes_falsenodeids",
                     "nodes_falseleafs"):
            if len(getattr(self, name)) != n:
                raise ValidationError(f"{name} has {len(getattr(self, name))} entries, nodes_featureids {n}")
        if len(self.leaf_targetids) != len(self.leaf_weights):
            raise ValidationError("leaf_targetids and leaf_weights differ in length")
        if any(not 0 <= t < self.n_targets for t in self.leaf_targetids):
            raise ValidationError(f"a leaf_targetids entry is outside [0, {self.n_targets})")
        ps = self.get_input_partial_shape(0)
        batch = ps[0] if ps.rank.is_static and len(ps) >= 1 else -1
        return [(self.get_input_element_type(0), PartialShape([batch, self.n_targets]))]

    def _member_sets(self) -> dict[int, set[float]]:
        sets: list[set[float]] = [set()]
        for v in self.membership_values or []:
            if np.isnan(v):
                sets.append(set())
            else:
                sets[-1].add(v)
        members = [i for i, m in enumerate(self.nodes_modes) if m == BRANCH_MEMBER]
        return {node: sets[k] if k < len(sets) else set() for k, node in enumerate(members)}

    def _test(self, i: int, x: float, members: dict[int, set[float]]) -> bool:
        if np.isnan(x):
            tracks = self.nodes_missing_value_tracks_true
            return bool(tracks and tracks[i])
        mode, split = self.nodes_modes[i], self.nodes_splits[i]
        if mode == BRANCH_MEMBER:
            return x in members[i]
        return {BRANCH_LEQ: x <= split, BRANCH_LT: x < split, BRANCH_GTE: x >= split, BRANCH_GT: x > split,
                BRANCH_EQ: x == split, BRANCH_NEQ: x != split}[mode]

    def _leaf(self, root: int, row: np.ndarray, members: dict[int, set[float]]) -> int:
        node, steps = root, 0
        while True:
            steps += 1
            if steps > len(self.nodes_featureids) + 1:
                raise ValidationError(f"tree rooted at node {root} has a cycle")
            x = float(row[self.nodes_featureids[node]])
            if self._test(node, x, members):
                node, is_leaf = self.nodes_truenodeids[node], self.nodes_trueleafs[node]
            else:
                node, is_leaf = self.nodes_falsenodeids[node], self.nodes_falseleafs[node]
            if is_leaf:
                return node

    def evaluate(self, inputs: list) -> list:
        x = np.asarray(inputs[0])
        rows = x.reshape(x.shape[0], -1) if x.ndim else x.reshape(1, 1)
        members = self._member_sets()
        agg = self.aggregate_function
        out = np.zeros((rows.shape[0], self.n_targets), dtype=np.float64)
        for r, row in enumerate(rows):
            per_tree = [self._leaf(root, row, members) for root in self.tree_roots]
            acc: dict[int, list[float]] = {}
            for leaf in per_tree:
                acc.setdefault(self.leaf_targetids[leaf], []).append(self.leaf_weights[leaf])
            for t, ws in acc.items():
                if agg == "SUM":
                    out[r, t] = sum(ws)
                elif agg == "AVERAGE":
                    out[r, t] = sum(ws) / len(self.tree_roots)
                elif agg == "MIN":
                    out[r, t] = min(ws)
                else:
                    out[r, t] = max(ws)
        return [post_transform(out, self.post_transform).astype(x.dtype)]
