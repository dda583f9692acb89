"""MVN fusion: mean-variance normalization written out (as PaddlePaddle's and PyTorch's pre-opset-17 exporters write
LayerNorm) becomes one MVN, which the devices' LayerNorm fusions then take with its scale and shift.

Matched, over constant ``axes`` (the same for both means, ``keep_dims`` true), every intermediate value read only
inside the pattern::

    d   = x - ReduceMean(x, axes)                 (the variance may read its own copy of d)
    var = ReduceMean(Power(d, 2) or d * d, axes)
    y   = d / Sqrt(var + eps)                     eps_mode inside_sqrt (Sqrt or Power(., 0.5))
    y   = d / (Sqrt(var) + eps)                   eps_mode outside_sqrt
    y   = d * Power(var + eps, -0.5)              the reciprocal square root, inside_sqrt

with the division also written ``d * Power(s, -1)`` or ``d * (1 / s)`` (ONNX's Reciprocal). ``eps`` is a
one-element constant. The fused MVN computes the same variance (the mean of squared differences), in one pass.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.normalization import MVN
from vinerun.ops.reduction import normalize_axes
from vinerun.transformations.fusions import _sole_consumer, is_scalar, scalar_constant
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _other(node: Node, known: Output) -> Output | None:
    """The operand of binary ``node`` that is not ``known`` (None when neither or both are)."""
    a, b = node.input_values()
    if (a == known) == (b == known):
        return None
    return b if a == known else a


def _mean_axes(mean: Node, x: Output) -> list[int] | None:
    """The normalized axes when ``mean`` is a keep-dims ReduceMean of ``x`` over constant axes."""
    if mean.type_name != "ReduceMean" or mean.input_value(0) != x or not mean.keep_dims:
        return None
    axes, rank = mean.const_input(1), x.partial_shape.rank
    if axes is None or rank.is_dynamic or np.asarray(axes).size == 0:
        return None
    try:
        return normalize_axes(axes, rank.get_length())
    except Exception:  # noqa: BLE001 - out-of-range axes: validation reports them, not this pass
        return None


def _centered(d: Output) -> tuple[Output, list[int], Node] | None:
    """(x, axes, the ReduceMean) when ``d`` is ``x - ReduceMean(x, axes)`` and the mean is read only there."""
    sub = d.node
    if sub.type_name != "Subtract":
        return None
    x, mean = sub.input_values()
    axes = _mean_axes(mean.node, x)
    if axes is None or _sole_consumer(mean.node) is not sub:
        return None
    return x, axes, mean.node


def _square_of(sq: Node) -> Output | None:
    """v when ``sq`` is ``Power(v, 2)`` or ``v * v``."""
    a, b = sq.input_values()
    if sq.type_name == "Power" and is_scalar(b, 2.0):
        return a
    if sq.type_name == "Multiply" and a == b:
        return a
    return None


def _root_of(node: Node) -> Output | None:
    """v when ``node`` is ``Sqrt(v)`` or ``Power(v, 0.5)``."""
    if node.type_name == "Sqrt":
        return node.input_value(0)
    if node.type_name == "Power" and is_scalar(node.input_value(1), 0.5):
        return node.input_value(0)
    return None


def _plus_eps(node: Node) -> tuple[Output, float] | None:
    """(v, eps) when ``node`` is ``v + eps`` with a one-element constant eps."""
    if node.type_name != "Add":
        return None
    a, b = node.input_values()
    for v, e in ((a, b), (b, a)):
        eps = scalar_constant(e)
        if eps is not None and not isinstance(v.node, Constant):
            return v, eps
    return None


def _denominator(y: Node, d: Output) -> tuple[Output, list[Node], bool] | None:
    """(s, nodes, s_is_rsqrt_operand) for ``y = d / s`` in its spellings: ``Divide(d, s)``, ``d * Power(s, -1)``,
    ``d * (1 / s)``; or ``d * Power(v, -0.5)`` (then s is v, and the flag says the root is in the power)."""
    if y.type_name == "Divide":
        return (y.input_value(1), [], False) if y.input_value(0) == d else None
    inv = _other(y, d)
    if y.type_name != "Multiply" or inv is None or _sole_consumer(inv.node) is not y:
        return None
    node = inv.node
    if node.type_name == "Power" and is_scalar(node.input_value(1), -1.0):
        return node.input_value(0), [node], False
    if node.type_name == "Power" and is_scalar(node.input_value(1), -0.5):
        return node.input_value(0), [node], True
    if node.type_name == "Divide" and is_scalar(node.input_value(0), 1.0):
        return node.input_value(1), [node], False
    return None


def match_mvn(y: Node) -> tuple[Output, list[int], float, str, list[Node]] | None:
    """(x, axes, eps, eps_mode, the nodes replaced) when ``y`` ends a written-out MVN, else None."""
    if y.type_name not in ("Divide", "Multiply") or y.get_output_size() != 1:
        return None
    for d in y.input_values():
        found = _match_from(y, d)
        if found is not None:
            return found
    return None


def _match_from(y: Node, d: Output) -> tuple[Output, list[int], float, str, list[Node]] | None:
    centered = _centered(d)
    den = _denominator(y, d) if centered is not None else None
    if den is None:
        return None
    x, axes, mean = centered  # type: ignore[misc]
    s, nodes, rsqrt = den
    chain = _variance_chain(s, rsqrt)
    if chain is None or _sole_consumer(s.node) is not (nodes[0] if nodes else y):
        return None
    var, eps, mode, eps_nodes = chain
    if _sole_consumer(var.node) is not eps_nodes[0]:
        return None
    var_axes = _mean_axes(var.node, var.node.input_value(0))
    sq = var.node.input_value(0).node
    dv = _square_of(sq)
    if var_axes != axes or dv is None or _sole_consumer(sq) is not var.node:
        return None
    own = []  # the variance's own copy of x - mean
    if dv != d:
        copy = _centered(dv)
        if copy is None or copy[0] != x or copy[1] != axes or _sole_consumer(dv.node) is not sq:
            return None
        own = [copy[2], dv.node]
    readers = {t.get_node() for t in d.node.output(0).get_target_inputs()}
    if readers != ({y, sq} if dv == d else {y}):
        return None
    if y.get_output_partial_shape(0) != x.partial_shape or y.get_output_element_type(0) != x.element_type:
        return None
    replaced = [mean, d.node, *own, sq, var.node, *eps_nodes, *nodes, y]
    return x, axes, eps, mode, replaced


def _variance_chain(s: Output, rsqrt: bool) -> tuple[Output, float, str, list[Node]] | None:
    """(var, eps, eps_mode, the nodes between var and the denominator) for a denominator ``s``."""
    if rsqrt:  # d * Power(var + eps, -0.5)
        inside = _plus_eps(s.node)
        return None if inside is None else (inside[0], inside[1], "inside_sqrt", [s.node])
    root = _root_of(s.node)
    if root is not None:  # Sqrt(var + eps)
        inside = _plus_eps(root.node)
        if inside is None or _sole_consumer(root.node) is not s.node:
            return None
        return inside[0], inside[1], "inside_sqrt", [root.node, s.node]
    outside = _plus_eps(s.node)  # Sqrt(var) + eps
    if outside is None:
        return None
    var = _root_of(outside[0].node)
    if var is None or _sole_consumer(outside[0].node) is not s.node:
        return None
    return var, outside[1], "outside_sqrt", [outside[0].node, s.node]


class MVNFusion(InPlacePass):
    """Replace each written-out mean-variance normalization (see the module docstring) with one ``MVN``.

    >>> MVNFusion()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = match_mvn(node)
            if found is None:
                continue
            x, axes, eps, mode, replaced = found
            mvn = MVN(x, Constant(np.array(axes, np.int64)), name=node.friendly_name, normalize_variance=True,
                      eps=eps, eps_mode=mode)
            replace_output_update_name(node.output(0), mvn.output(0))
            for n in replaced:
                n.detach()
            modified = True
        return PassResult(model, modified)
