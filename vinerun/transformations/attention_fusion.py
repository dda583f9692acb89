"""Attention fusion: ``MatMul(Q, K^T) -> scale -> (+ mask) -> Softmax(last axis) -> MatMul(., V)`` becomes one node.

Matched, from a Softmax over the last axis of a rank-4 float tensor:

- scores ``MatMul(q, k, transpose_b=True)``, or ``MatMul(q, Transpose(k, [0, 1, 3, 2]))`` (``transpose_a`` false),
  or ``MatMul(q, Transpose(Reshape(k [B, S, H*D] -> [B, S, H, D]), [0, 2, 3, 1]))`` (the head split and k^T in one
  Transpose, as exporters merge them);
- an optional scale: ``Multiply`` by a scalar Constant or ``Divide`` by one; and/or ``Multiply`` of q and of k^T by
  scalar Constants before the MatMul (torch's export of ``scaled_dot_product_attention``);
- an optional additive mask: ``Add`` of a non-constant or constant tensor of the scores' element type;
- the context ``MatMul(softmax, v)``, or ``MatMul(Select(IsNaN(softmax), 0, softmax), v)`` (a NaN guard).

Every intermediate value is read only by the next link. Around it, the head split of each of q, k, v
(``Transpose(Reshape(x [B, S, H*D] -> [B, S, H, D]), [0, 2, 1, 3])``) and the head merge of the output
(``Reshape(Transpose(ctx, [0, 2, 1, 3]) -> [B, S, H*D])``) are taken in too when they are only read by the
attention, so a device can read the heads as strided views instead of copies. A device's ``make_fused``
factory builds the node from the :class:`AttentionMatch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output
from vinerun.transformations.fusions import _FLOATS, _sole_consumer, scalar_constant
from vinerun.transformations.pass_infra import ReplaceMatches

_HEADS = [0, 2, 1, 3]


@dataclass
class AttentionMatch:
    """A matched attention block.

    ``inputs`` are q, k, v: each ``[B, H, S, D]``, or ``[B, S, H*D]`` when its name is in ``split`` (then
    ``heads`` is H); ``mask`` is the additive mask (None when absent); ``scale`` multiplies the scores;
    ``merge`` says the output is ``[B, S, H*D]`` (else ``[B, H, S, D]``); ``nan_guard``: the probabilities went
    through ``Select(IsNaN(p), 0, p)`` (rows the mask removes entirely give zeros); ``nodes`` are the replaced
    nodes, the last one's output being the attention's.
    """

    inputs: list[Output]
    scale: float
    mask: Output | None = None
    split: str = ""
    heads: int = 0
    merge: bool = False
    nan_guard: bool = False
    nodes: list[Node] = field(default_factory=list)

    @property
    def last(self) -> Node:
        return self.nodes[-1]


def _const_perm(node: Node) -> list[int] | None:
    if node.type_name != "Transpose" or not isinstance(node.input_value(1).node, Constant):
        return None
    return [int(p) for p in np.asarray(node.input_value(1).node.get_value()).reshape(-1)]


def _static(out: Output) -> list[int] | None:
    shape = out.partial_shape
    return [d.get_length() for d in shape] if shape.is_static else None


def _split_source(out: Output, used_by: Node) -> tuple[Output, int, list[Node]] | None:
    """(x [B, S, H*D], H, the Reshape and Transpose) when ``out`` is the head split of x read only by ``used_by``."""
    tr = out.node
    if _const_perm(tr) != _HEADS or _sole_consumer(tr) is not used_by:
        return None
    split = _reshape_split(tr.input_value(0), tr)
    return None if split is None else (split[0], split[1], [*split[2], tr])


def _reshape_split(out: Output, used_by: Node) -> tuple[Output, int, list[Node]] | None:
    """(x [B, S, H*D], H, [the Reshape]) when ``out`` is ``Reshape(x) -> [B, S, H, D]`` read only by ``used_by``."""
    rs = out.node
    if rs.type_name != "Reshape" or _sole_consumer(rs) is not used_by:
        return None
    src, dst = _static(rs.input_value(0)), _static(rs.output(0))
    if src is None or dst is None or len(src) != 3 or len(dst) != 4 or src[:2] != dst[:2] \
            or dst[2] * dst[3] != src[2]:
        return None
    return rs.input_value(0), dst[2], [rs]


def _scaled(out: Output, used_by: Node) -> tuple[Output, float]:
    """(x, s) when ``out`` is ``Multiply(x, s)`` by a scalar constant read only by ``used_by``, else (out, 1)."""
    mul = out.node
    if mul.type_name != "Multiply" or _sole_consumer(mul) is not used_by:
        return out, 1.0
    a, b = mul.input_values()
    s = scalar_constant(b)
    if s is None:
        s, a = scalar_constant(a), b
    if s is None or s == 0.0 or a.partial_shape != out.partial_shape:
        return out, 1.0
    return a, s


def _nan_guard(softmax: Node) -> list[Node]:
    """[IsNaN, Select] when the Softmax's only readers are ``Select(IsNaN(p), 0, p)`` (torch's export of
    ``scaled_dot_product_attention`` writes it: a row of -inf scores gives NaNs, the guard zeros), else []."""
    readers = [t.get_node() for t in softmax.output(0).get_target_inputs()]
    if len(readers) != 2:
        return []
    isnan = next((n for n in readers if n.type_name == "IsNaN"), None)
    select = next((n for n in readers if n.type_name == "Select"), None)
    if isnan is None or select is None or _sole_consumer(isnan) is not select:
        return []
    cond, zero, value = select.input_values()
    if cond.node is not isnan or value.node is not softmax or scalar_constant(zero) != 0.0:
        return []
    if select.get_output_partial_shape(0) != softmax.get_output_partial_shape(0):
        return []
    return [isnan, select]


def _merge(ctx: Node, heads: int) -> list[Node] | None:
    """[Transpose, Reshape] when ``ctx`` [B, H, S, D] is only merged back into [B, S, H*D]."""
    tr = _sole_consumer(ctx)
    if tr is None or _const_perm(tr) != _HEADS:
        return None
    rs = _sole_consumer(tr)
    if rs is None or rs.type_name != "Reshape":
        return None
    src, dst = _static(ctx.output(0)), _static(rs.output(0))
    if src is None or dst is None or len(dst) != 3 or dst != [src[0], src[2], src[1] * src[3]] or src[1] != heads:
        return None
    return [tr, rs]


def _scores(softmax: Node) -> tuple[Node, float, Output | None, list[Node]] | None:
    """(the Q K^T MatMul, scale, mask, [scale, mask nodes]) walking up from the Softmax."""
    cur, mask, scale, between = softmax.input_value(0).node, None, 1.0, []
    if cur.type_name == "Add" and _sole_consumer(cur) is softmax:
        a, b = cur.input_values()
        up, mask = (a, b) if a.node.type_name in ("Multiply", "Divide", "MatMul") else (b, a)
        between.insert(0, cur)
        if _sole_consumer(up.node) is not cur or cur.get_output_partial_shape(0) != up.partial_shape:
            return None  # a mask that broadcasts the scores to a bigger shape is not SDPA's
        cur = up.node
    if cur.type_name in ("Multiply", "Divide") and _sole_consumer(cur) is (between[0] if between else softmax):
        a, b = cur.input_values()
        s = scalar_constant(b)
        if s is None and cur.type_name == "Multiply":
            s, b, a = scalar_constant(a), a, b
        if s is None or s == 0.0 or a.node.type_name != "MatMul" or _sole_consumer(a.node) is not cur:
            return None
        scale = s if cur.type_name == "Multiply" else 1.0 / s
        between.insert(0, cur)
        cur = a.node
    if cur.type_name != "MatMul" or cur.transpose_a or _sole_consumer(cur) is not (between[0] if between else softmax):
        return None
    return cur, scale, mask, between


def match_attention(softmax: Node) -> AttentionMatch | None:
    """The attention block around a Softmax (None when it is not one)."""
    if softmax.type_name != "Softmax" or softmax.get_output_partial_shape(0).rank.is_dynamic:
        return None
    rank = softmax.get_output_partial_shape(0).rank.get_length()
    et = softmax.get_output_element_type(0).get_type_name()
    if rank != 4 or et not in _FLOATS or softmax.axis not in (-1, 3):
        return None
    found = _scores(softmax)
    guard = _nan_guard(softmax)
    probs = guard[-1] if guard else softmax
    ctx = _sole_consumer(probs)
    if found is None or ctx is None or ctx.type_name != "MatMul" or ctx.transpose_a or ctx.transpose_b \
            or ctx.input_value(0).node is not probs:
        return None
    qk, scale, mask, between = found
    if mask is not None and (mask.element_type.get_type_name() != et or mask.partial_shape.rank.is_dynamic
                             or not 2 <= mask.partial_shape.rank.get_length() <= 4):
        return None  # (a scalar or 1-D "mask" the kernels do not take: a score_mod's constant, say)
    nodes: list[Node] = []
    # a scale on q and/or on k^T instead of on the scores (how torch exports scaled_dot_product_attention)
    q, q_scale = _scaled(qk.input_value(0), qk)
    k, k_scale = _scaled(qk.input_value(1), qk)
    scaling = [o.node for o, s in ((qk.input_value(0), q_scale), (qk.input_value(1), k_scale)) if s != 1.0]
    scale *= q_scale * k_scale
    k_user = scaling[-1] if k_scale != 1.0 else qk
    v = ctx.input_value(1)
    k_split: tuple[Output, int, list[Node]] | None = None
    if not qk.transpose_b:
        perm = _const_perm(k.node)
        if _sole_consumer(k.node) is not k_user or perm not in ([0, 1, 3, 2], [0, 2, 3, 1]):
            return None
        if perm == [0, 2, 3, 1]:  # the head split and k^T in one Transpose, as exporters merge the two
            k_split = _reshape_split(k.node.input_value(0), k.node)
            if k_split is None:
                return None
        nodes.append(k.node)
        k = k.node.input_value(0)
    if any(t.partial_shape.rank.is_dynamic or t.partial_shape.rank.get_length() != 4
           or t.element_type.get_type_name() != et for t in (q, k, v)):
        return None
    match = AttentionMatch([q, k, v], scale, mask, nan_guard=bool(guard))
    first_user = {"q": scaling[0] if q_scale != 1.0 else qk, "k": nodes[0] if nodes else k_user, "v": ctx}
    heads = set()
    for i, name in enumerate("qkv"):
        split = k_split if name == "k" and k_split is not None else _split_source(match.inputs[i], first_user[name])
        if split is not None:
            match.inputs[i], h, split_nodes = split
            heads.add(h)
            nodes = split_nodes + nodes
            match.split += name
    nodes += scaling
    if len(heads) > 1:
        return None
    match.heads = heads.pop() if heads else 0
    nodes += [qk, *between, softmax, *guard, ctx]
    merged = _merge(ctx, match.heads) if match.heads else None
    if merged is not None:
        nodes += merged
        match.merge = True
    match.nodes = nodes
    return match


class AttentionFusion(ReplaceMatches):
    """Replace each attention block (see the module docstring) with ``make_fused(match)``.

    The factory may return None to leave a block alone; the fused node takes the block's last tensor names.

    >>> AttentionFusion(lambda m: MyAttention(m))(model).modified
    True
    """

    def match(self, node: Node) -> AttentionMatch | None:
        return match_attention(node) if node.type_name == "Softmax" else None

    def covered(self, match: AttentionMatch) -> tuple[Node, list[Node]]:
        return match.last, match.nodes
