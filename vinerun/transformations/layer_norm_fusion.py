"""LayerNorm fusion: ``MVN(x, axes=[last]) -> Multiply(gamma) -> Add(beta)`` becomes one node.

Matched: an MVN over the last axis only, ``normalize_variance`` true, ``eps_mode`` ``inside_sqrt`` (LayerNorm's
``(x - mean) / sqrt(var + eps)``), float, of static rank; then optionally a Multiply by a Constant ``gamma`` and
an Add of a Constant ``beta`` (in this order), each broadcasting along the last axis only, with the output's
element type, every intermediate value read only by the next link. This is the graph the ONNX frontend makes of
``LayerNormalization`` and what the model builders write. A device's ``make_fused`` factory builds the node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output
from vinerun.transformations.fusions import _FLOATS, _sole_consumer
from vinerun.transformations.pass_infra import ReplaceMatches


@dataclass
class LayerNormMatch:
    """A matched LayerNorm: input ``x``, ``eps``, the ``[N]`` gamma/beta (None when absent), the nodes."""

    x: Output
    eps: float
    gamma: np.ndarray | None
    beta: np.ndarray | None
    nodes: list[Node] = field(default_factory=list)

    @property
    def last(self) -> Node:
        return self.nodes[-1]


def _last_axis_only(mvn: Node, rank: int) -> bool:
    axes = mvn.input_value(1).node
    if not isinstance(axes, Constant):
        return False
    values = [int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(axes.get_value()).reshape(-1)]
    return values == [rank - 1]


def _affine(cur: Node, node: Node | None, kind: str, n: int, et: str) -> np.ndarray | None:
    """The ``[n]`` constant of ``node`` when it is a ``kind`` (Multiply / Add) of ``cur`` by one along the last axis."""
    if node is None or node.type_name != kind or node.get_output_element_type(0).get_type_name() != et:
        return None
    ins = node.input_values()
    other = ins[1] if ins[0].node is cur else ins[0]
    if other.node is cur or not isinstance(other.node, Constant) or other.element_type.get_type_name() != et:
        return None
    value = other.node.get_value()
    if value.ndim > cur.get_output_partial_shape(0).rank.get_length() or any(d != 1 for d in value.shape[:-1]):
        return None
    if value.ndim and value.shape[-1] not in (1, n):
        return None
    return np.array(np.broadcast_to(value.reshape(-1), (n,)), dtype=value.dtype)


def match_layer_norm(mvn: Node) -> LayerNormMatch | None:
    """The LayerNorm an MVN starts (None when it is not one)."""
    if mvn.type_name != "MVN" or not mvn.normalize_variance or mvn.eps_mode != "inside_sqrt":
        return None
    shape = mvn.get_output_partial_shape(0)
    et = mvn.get_output_element_type(0).get_type_name()
    if et not in _FLOATS or shape.rank.is_dynamic or shape[shape.rank.get_length() - 1].is_dynamic:
        return None
    rank = shape.rank.get_length()
    if not _last_axis_only(mvn, rank):
        return None
    n = shape[rank - 1].get_length()
    found = LayerNormMatch(mvn.input_value(0), float(mvn.eps), None, None, [mvn])
    nxt = _sole_consumer(mvn)
    found.gamma = _affine(mvn, nxt, "Multiply", n, et)
    if found.gamma is not None:
        found.nodes.append(nxt)  # type: ignore[arg-type]
        nxt = _sole_consumer(nxt)  # type: ignore[arg-type]
    found.beta = _affine(found.last, nxt, "Add", n, et)
    if found.beta is not None:
        found.nodes.append(nxt)  # type: ignore[arg-type]
    return found


class LayerNormFusion(ReplaceMatches):
    """Replace each LayerNorm chain (see the module docstring) with ``make_fused(match)``.

    The factory may return None to leave a chain alone; the fused node takes the chain's last tensor names.

    >>> LayerNormFusion(lambda m: MyLayerNorm(m))(model).modified
    True
    """

    def match(self, node: Node) -> LayerNormMatch | None:
        return match_layer_norm(node)

    def covered(self, match: LayerNormMatch) -> tuple[Node, list[Node]]:
        return match.last, match.nodes
