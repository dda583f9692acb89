"""MatMul post-op fusion: MatMul by a constant 2-D weight + bias + activation + residual sum become one node.

The pass finds chains ``MatMul(x, Constant 2-D) -> Add(Constant broadcast along the last axis) -> activation
-> Add(a tensor of the output's static shape and type: a residual "sum")`` (each link optional, in this order,
every intermediate value read only by the next link) and
hands each :class:`~vinerun.transformations.fusions.ConvChain` (``conv`` holds the MatMul) to a device's
``make_fused`` factory, which returns the node that replaces the chain.
"""

from __future__ import annotations

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node
from vinerun.transformations.fusions import _FLOATS, ACTIVATIONS, ChainStep, ConvChain, _activation_step, _sole_consumer
from vinerun.transformations.pass_infra import ReplaceMatches


def _bias_step(cur: Node, add: Node, rank: int, et: str) -> ChainStep | None:
    """``add`` as a bias step: a Constant of the output's type that broadcasts along the last axis only."""
    ins = add.input_values()
    position = 0 if ins[0].node is cur else 1
    other = ins[1 - position]
    if other.node is cur or not isinstance(other.node, Constant) or other.element_type.get_type_name() != et:
        return None
    value = other.node.get_value()
    n = cur.get_output_partial_shape(0)[rank - 1]
    if value.ndim == 0 or value.ndim > rank or any(d != 1 for d in value.shape[:-1]):
        return None
    if value.shape[-1] != 1 and (n.is_dynamic or value.shape[-1] != n.get_length()):
        return None
    return ChainStep(add, "bias", position, other)


def _sum_step(cur: Node, add: Node, et: str) -> ChainStep | None:
    """``add`` as a residual sum: its other operand is a non-constant tensor of ``cur``'s static shape and type."""
    ins = add.input_values()
    position = 0 if ins[0].node is cur else 1
    other = ins[1 - position]
    shape, oshape = cur.get_output_partial_shape(0), other.partial_shape
    if other.node is cur or isinstance(other.node, Constant) or other.element_type.get_type_name() != et \
            or not (shape.is_static and oshape.is_static) or list(shape) != list(oshape):
        return None
    return ChainStep(add, "sum", position, other)


def match_matmul_chain(matmul: Node) -> ConvChain | None:
    """The fusable chain after a MatMul by a constant 2-D weight (None when it is not one or nothing follows)."""
    if matmul.type_name != "MatMul" or matmul.transpose_a or not isinstance(matmul.input_value(1).node, Constant):
        return None
    et = matmul.get_output_element_type(0).get_type_name()
    rank = matmul.get_output_partial_shape(0).rank
    if matmul.input_value(1).node.get_value().ndim != 2 or et not in _FLOATS or rank.is_dynamic \
            or matmul.get_input_partial_shape(0).rank.get_length() < 2:
        return None
    chain = ConvChain(matmul)
    allowed = ["bias", "activation", "sum"]
    cur = matmul
    while allowed:
        nxt = _sole_consumer(cur)
        if nxt is None or nxt.get_output_size() != 1:
            break
        step: ChainStep | None = None
        if nxt.type_name == "Add":
            step = _bias_step(cur, nxt, rank.get_length(), et) or _sum_step(cur, nxt, et)
        elif nxt.type_name in ACTIVATIONS and nxt.input_value(0).node is cur:
            step = _activation_step(nxt)
        if step is None or step.kind not in allowed:
            break
        allowed = allowed[allowed.index(step.kind) + 1:]
        chain.steps.append(step)
        cur = nxt
    return chain


class MatMulFusion(ReplaceMatches):
    """Replace every MatMul by a constant 2-D weight (and its bias/activation) with ``make_fused(chain)``.

    A MatMul with nothing after it is handed over too (so its weight can be prepacked). The factory may return
    None to leave a chain alone; the fused node takes the chain's last tensor names.

    >>> MatMulFusion(lambda chain: MyFusedMatMul(chain))(model).modified
    True
    """

    def match(self, node: Node) -> ConvChain | None:
        return match_matmul_chain(node)

    def covered(self, match: ConvChain) -> tuple[Node, list[Node]]:
        return match.last, [match.conv, *(s.node for s in match.steps)]
