"""Convolution post-op fusion: Conv + bias + activation + residual sum (+ activation) become one node.

The pass finds chains ``(Group)Convolution -> Add(per-channel Constant) -> activation -> Add(tensor of the
same shape) -> activation`` (each link optional, in this order, every intermediate value read only by the
next link) and hands each :class:`ConvChain` to a device's ``make_fused`` factory, which returns the node
that replaces the chain (transformations never import a device, so the fused op is the device's own).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output
from vinerun.transformations.pass_infra import ReplaceMatches

#: activations a chain may hold (before and/or after the residual sum)
ACTIVATIONS = frozenset({"Relu", "Clamp", "Sigmoid", "Tanh", "HSwish", "Swish", "Gelu", "Elu", "Mish", "SoftPlus"})
CONVOLUTIONS = frozenset({"Convolution", "GroupConvolution"})
_FLOATS = frozenset({"f32", "f16", "bf16", "f64"})


@dataclass
class ChainStep:
    """One fused op after the convolution.

    ``kind`` is "bias", "activation", "sum", "scale" or "shift" (a scalar Multiply / Add closing the chain);
    ``position`` is the input of ``node`` the running value feeds;
    ``operand`` is its other input (the bias, the residual, Swish's beta), if any.
    """

    node: Node
    kind: str
    position: int = 0
    operand: Output | None = None


@dataclass
class ConvChain:
    """A convolution and the steps fused after it, in execution order."""

    conv: Node
    steps: list[ChainStep] = field(default_factory=list)

    @property
    def last(self) -> Node:
        return self.steps[-1].node if self.steps else self.conv

    def kinds(self) -> list[str]:
        return [s.kind for s in self.steps]


def scalar_constant(out: Output) -> float | None:
    """The value of ``out`` when it is a one-element Constant, else None."""
    if not isinstance(out.node, Constant):
        return None
    v = out.node.get_value()
    return float(np.asarray(v).reshape(-1)[0]) if v.size == 1 else None


def is_scalar(out: Output, want: float) -> bool:
    """Whether ``out`` is a one-element Constant equal to ``want`` (within 1e-5, relative above 1)."""
    value = scalar_constant(out)
    return value is not None and abs(value - want) <= 1e-5 * max(1.0, abs(want))


def keeps_value(node: Node, x: Output) -> bool:
    """Whether ``node``'s output has ``x``'s shape and element type (a unary op of ``x`` may replace it: no
    operand broadcast it larger or changed its type)."""
    return node.get_output_partial_shape(0) == x.partial_shape and node.get_output_element_type(0) == x.element_type


def _sole_consumer(node: Node) -> Node | None:
    targets = node.output(0).get_target_inputs()
    if node.get_output_size() != 1 or len(targets) != 1:
        return None
    return next(iter(targets)).get_node()


def _per_channel(value: np.ndarray, rank: int, dtype_name: str, out: Output) -> bool:
    """``value`` broadcasts along axis 1 only of a rank-``rank`` output, with the output's element type."""
    if value.ndim > rank or out.element_type.get_type_name() != dtype_name:
        return False
    shape = (1,) * (rank - value.ndim) + value.shape
    return all(d == 1 for i, d in enumerate(shape) if i != 1)


def _add_step(cur: Node, add: Node, rank: int, et: str) -> ChainStep | None:
    """``add`` as a bias step (per-channel Constant) or a sum step (same-shape tensor), else None."""
    ins = add.input_values()
    position = 0 if ins[0].node is cur else 1
    other = ins[1 - position]
    if other.node is cur or add.get_output_element_type(0).get_type_name() != et:
        return None
    if isinstance(other.node, Constant):
        if _per_channel(other.node.get_value(), rank, et, other):
            return ChainStep(add, "bias", position, other)
        return None
    shape, oshape = cur.get_output_partial_shape(0), other.partial_shape
    if shape.is_static and oshape.is_static and list(shape) == list(oshape) \
            and other.element_type.get_type_name() == et:
        return ChainStep(add, "sum", position, other)
    return None


def _scalar_operand(step: ChainStep) -> bool:
    return step.operand is not None and scalar_constant(step.operand) is not None


def _scale_step(cur: Node, mul: Node, et: str) -> ChainStep | None:
    """``mul`` as a scale step: the running value times a scalar Constant of its element type."""
    ins = mul.input_values()
    position = 0 if ins[0].node is cur else 1
    other = ins[1 - position]
    if other.node is cur or mul.get_output_element_type(0).get_type_name() != et:
        return None
    step = ChainStep(mul, "scale", position, other)
    ok = _scalar_operand(step) and other.element_type.get_type_name() == et
    return step if ok and mul.get_output_partial_shape(0) == cur.get_output_partial_shape(0) else None


def _activation_step(node: Node) -> ChainStep | None:
    if node.get_input_size() == 1:
        return ChainStep(node, "activation")
    if node.type_name == "Swish" and isinstance(node.input_value(1).node, Constant) \
            and node.input_value(1).node.get_value().size == 1:
        return ChainStep(node, "activation", 0, node.input_value(1))
    return None


def match_chain(conv: Node) -> ConvChain | None:
    """The longest fusable chain after ``conv`` (None when nothing follows it)."""
    if conv.type_name not in CONVOLUTIONS or conv.get_output_size() != 1:
        return None
    et = conv.get_output_element_type(0).get_type_name()
    rank = conv.get_output_partial_shape(0).rank
    if et not in _FLOATS or rank.is_dynamic:
        return None
    chain = ConvChain(conv)
    # the order links may come in; a scalar scale and shift close the chain (``y * a + b``: PaddlePaddle's
    # learnable affine block after an activation), one linear post-op
    allowed = ["bias", "activation", "sum", "activation", "scale", "shift"]
    cur = conv
    while allowed:
        nxt = _sole_consumer(cur)
        if nxt is None or nxt.get_output_size() != 1:
            break
        step: ChainStep | None = None
        if nxt.type_name == "Add":
            step = _add_step(cur, nxt, rank.get_length(), et)
            if step is not None and step.kind == "bias" and "bias" not in allowed and _scalar_operand(step):
                step.kind = "shift"
        elif nxt.type_name == "Multiply":
            step = _scale_step(cur, nxt, et)
        elif nxt.type_name in ACTIVATIONS and nxt.input_value(0).node is cur:
            step = _activation_step(nxt)
        if step is None or step.kind not in allowed:
            break
        allowed = allowed[allowed.index(step.kind) + 1:]
        chain.steps.append(step)
        cur = nxt
    return chain if chain.steps else None


class ConvFusion(ReplaceMatches):
    """Replace every fusable convolution chain with the node ``make_fused(chain)`` returns.

    The factory may return None to leave a chain alone. The fused node takes the chain's last tensor names.

    >>> ConvFusion(lambda chain: MyFusedConv(chain))(model).modified
    True
    """

    def match(self, node: Node) -> ConvChain | None:
        return match_chain(node)

    def covered(self, match: ConvChain) -> tuple[Node, list[Node]]:
        return match.last, [match.conv, *(s.node for s in match.steps)]
