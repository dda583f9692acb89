"""Chains of element-wise ops as one GPU node, run by one generated Triton kernel (the role clDNN's fused OpenCL
kernels play).

:class:`EltwiseChainFusion` finds a value and the element-wise ops that follow it one after another (each
intermediate read only by the next op); each op's other operand is a one-element value (a scalar) or a tensor of
the running value's shape (a residual). The chain becomes one :class:`EltwiseChain` node; when the value that
starts it comes from a convolution, a pooling or a MatMul read only by the chain, that op is taken in as the
chain's *head* (Convolution + any number of activations, scales and shifts; Pooling + FakeQuantize).

On CUDA with Triton the steps run as one generated kernel (:mod:`.triton_codegen`, exec type ``triton_fused``):
one read and one write of the tensor instead of one per op. Elsewhere (the CPU stand-in, XPU) they run as eager
PyTorch ops (``eager_fused``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Attr, Node, Output
from vinerun.transformations.pass_infra import InPlacePass, PassResult

#: one-input ops a chain takes
UNARY = frozenset({"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Sqrt", "Negative", "Clamp", "Swish", "HSwish",
                   "HSigmoid", "Gelu", "Erf", "Floor", "Ceiling", "SoftPlus", "Mish", "Elu"})
#: two-input ops a chain takes (the running value either side)
BINARY = frozenset({"Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "Power", "SquaredDifference",
                    "PRelu"})
#: producers a chain takes in as its head
HEADS = frozenset({"Convolution", "GroupConvolution", "FusedConvolution", "MaxPool", "AvgPool", "MatMul",
                   "FusedMatMul"})
_FLOATS = frozenset({"f32", "f16", "bf16"})


@dataclass(frozen=True)
class Step:
    """One op of the chain: the detached ``node``, the input the running value feeds (``position``) and the chain
    node's input holding its other operand (``operand``; None for a one-input op)."""

    node: Node
    position: int
    operand: int | None


def _float(out: Output) -> bool:
    return out.element_type.get_type_name() in _FLOATS


def _sole_reader(out: Output) -> Node | None:
    targets = out.get_target_inputs()
    return next(iter(targets)).get_node() if len(targets) == 1 else None


def _operand_ok(operand: Output, running: Output) -> bool:
    """A scalar, or a tensor of the running value's (static) shape and type."""
    if operand.element_type != running.element_type:
        return False
    shape = operand.partial_shape
    if shape.is_static and int(np.prod(shape.to_shape() or [1])) == 1:
        return True
    return shape.is_static and running.partial_shape.is_static and shape == running.partial_shape


def _step_of(node: Node, running: Output) -> tuple[int, Output | None] | None:
    """(position of the running value, the other operand) when ``node`` can extend a chain over ``running``."""
    if node.get_output_size() != 1 or not _float(node.output(0)):
        return None
    if node.type_name in UNARY:
        if node.input_value(0) != running:
            return None
        if node.type_name == "Swish" and node.get_input_size() > 1:
            beta = node.input_value(1)
            return (0, beta) if beta is not None and _operand_ok(beta, running) else None
        return (0, None) if node.get_input_size() == 1 else None
    if node.type_name in BINARY and node.get_input_size() == 2:
        if node.get_attributes().get("auto_broadcast", "numpy") != "numpy":
            return None
        a, b = node.input_value(0), node.input_value(1)
        if a == running and b != running and _operand_ok(b, running):
            return 0, b
        if b == running and a != running and _operand_ok(a, running) and node.type_name != "PRelu":
            return 1, a
    return None


class EltwiseChain(Node):
    """An optional head op and the element-wise steps after it, as one node.

    Inputs: the head's inputs (or the chain's input value), then each step's other operand in order.
    """

    type_name, version = "EltwiseChain", "vinerun_gpu"
    num_inputs = (1, 64)
    ops = Attr("str", "")

    @classmethod
    def build(cls, head: Node | None, start: Output, nodes: list[tuple[Node, int, Output | None]]) -> EltwiseChain:
        inputs: list[Output] = list(head.input_values()) if head is not None else [start]
        steps = []
        for node, position, operand in nodes:
            index = None
            if operand is not None:
                index = len(inputs)
                inputs.append(operand)
            steps.append(Step(node, position, index))
        names = ([head.type_name] if head is not None else []) + [n.type_name for n, _, _ in nodes]
        chain = cls.__new__(cls)  # the node takes the last step's name: profiling reports it as that
        chain.__dict__.update(_head=head, _steps=tuple(steps), _head_inputs=len(inputs) - sum(
            1 for s in steps if s.operand is not None))
        Node.__init__(chain, inputs, name=nodes[-1][0].friendly_name, ops=",".join(names))
        return chain

    @property
    def head(self) -> Node | None:
        """The detached head op (its input ``i`` is this node's input ``i``), or None."""
        return self.__dict__.get("_head")

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.__dict__.get("_steps", ())

    @property
    def head_inputs(self) -> int:
        """How many of this node's inputs are the head's (1 without a head: the chain's input)."""
        return self.__dict__.get("_head_inputs", 1)

    @property
    def fused_names(self) -> list[tuple[str, str]]:
        """(friendly name, type) of every op fused into this node: the head and what it had fused, the steps."""
        head = self.head
        taken = [(head.friendly_name, head.type_name), *getattr(head, "fused_names", ())] if head is not None else []
        return taken + [(s.node.friendly_name, s.node.type_name) for s in self.steps[:-1]]

    def infer(self) -> list:
        last = self.steps[-1].node if self.steps else self.head
        return [(last.get_output_element_type(0), last.get_output_partial_shape(0))]  # type: ignore[union-attr]

    def validate_and_infer_types(self) -> None:
        # lowered to f16: the steps follow their inputs' type (the detached nodes are not re-inferred)
        et = self.get_input_element_type(0)
        super().validate_and_infer_types()
        if et.get_type_name() in _FLOATS and self.steps:
            self.set_output_type(0, et, self.get_output_partial_shape(0))

    def evaluate(self, inputs: list) -> list:
        n = self.head_inputs
        y = self.head.evaluate(inputs[:n])[0] if self.head is not None else inputs[0]
        for s in self.steps:
            args: list[Any] = [None] * (2 if s.operand is not None else 1)
            args[s.position] = y
            if s.operand is not None:
                args[1 - s.position] = inputs[s.operand]
            y = s.node.evaluate(args)[0]
        return [np.asarray(y).astype(np.asarray(inputs[0]).dtype, copy=False)]


class EltwiseChainFusion(InPlacePass):
    """Replace each chain of element-wise ops (two or more, or one after a head) with an :class:`EltwiseChain`;
    ``accepts(node)`` says which ops (steps and heads) the device runs (a chain never takes a host op)."""

    def __init__(self, accepts: Callable[[Node], bool]):
        self.accepts = accepts

    def call(self, model: Model) -> PassResult:
        taken: set[int] = set()
        modified = False
        for node in model.get_ordered_ops():
            if id(node) in taken or isinstance(node, Constant) or node.get_output_size() != 1:
                continue  # (an element-wise op a chain did not take may start one)
            modified |= self._chain_from(node.output(0), taken)
        return PassResult(model, modified)

    def _chain_from(self, start: Output, taken: set[int]) -> bool:
        running, nodes = start, []
        while True:
            nxt = _sole_reader(running)
            if nxt is None or id(nxt) in taken:
                break
            found = _step_of(nxt, running)
            if found is None or not self.accepts(nxt):
                break
            nodes.append((nxt, found[0], found[1]))
            running = nxt.output(0)
        head = start.node if start.node.type_name in HEADS and _float(start) and self.accepts(start.node) else None
        if not nodes or (head is None and len(nodes) < 2):
            return False
        chain = EltwiseChain.build(head, start, nodes)
        replace_output_update_name(nodes[-1][0].output(0), chain.output(0))
        for n in ([head] if head is not None else []) + [n for n, _, _ in nodes]:
            n.detach()
            taken.add(id(n))
        return True
