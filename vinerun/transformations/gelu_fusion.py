"""GELU fusion: the erf form ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (as ONNX exporters write it) and the tanh form
``x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))`` (GPT-2's "gelu_new") become one Gelu.

Matched shapes: ``Erf(Div(x, sqrt2))`` or ``Erf(Mul(x, 1/sqrt2))``, then ``Add(., 1)``, then either
``Mul(Mul(x, 0.5), .)`` or ``Mul(Mul(x, .), 0.5)`` (operands in either order, every intermediate value read only
by the next link, constants scalar within 1e-5).
"""

from __future__ import annotations

import math

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.activations import Gelu
from vinerun.transformations.fusions import _sole_consumer, is_scalar
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _split(node: Node, want: float) -> Output | None:
    """The non-constant operand of a binary ``node`` whose other operand is the scalar ``want``."""
    a, b = node.input_values()
    if is_scalar(b, want):
        return a
    if is_scalar(a, want):
        return b
    return None


def _erf_heart(erf: Node) -> tuple[Output, list[Node]] | None:
    """(x, [the scaling, the Erf]) for ``Erf(x / sqrt(2))`` or ``Erf(x * (1/sqrt(2)))``."""
    scaled = erf.input_value(0).node
    if scaled.type_name == "Divide":
        x = scaled.input_value(0) if is_scalar(scaled.input_value(1), math.sqrt(2)) else None
    elif scaled.type_name == "Multiply":
        x = _split(scaled, 1 / math.sqrt(2))
    else:
        return None
    if x is None or _sole_consumer(scaled) is not erf:
        return None
    return x, [scaled, erf]


def _monomial(out: Output, x: Output, nodes: list[Node], depth: int = 0) -> tuple[float, int] | None:
    """(k, n) when ``out`` is ``k * x**n`` built of Multiply / Power nodes and scalar constants (each node read
    only inside the tree; appended to ``nodes``), else None."""
    if out == x:
        return 1.0, 1
    node = out.node
    if depth > 4 or node.get_output_size() != 1 or len(node.output(0).get_target_inputs()) != 1:
        return None
    if node.type_name == "Power" and node.input_value(0) == x:
        e = node.input_value(1)
        if isinstance(e.node, Constant) and e.node.get_value().size == 1:
            n = float(e.node.get_value().reshape(()))
            if n.is_integer() and n > 0:
                nodes.append(node)
                return 1.0, int(n)
        return None
    if node.type_name != "Multiply":
        return None
    k, n = 1.0, 0
    for operand in node.input_values():
        if isinstance(operand.node, Constant) and operand.node.get_value().size == 1:
            k *= float(operand.node.get_value().reshape(()))
            continue
        term = _monomial(operand, x, nodes, depth + 1)
        if term is None:
            return None
        k, n = k * term[0], n + term[1]
    nodes.append(node)
    return k, n


def _tanh_heart(tanh: Node) -> tuple[Output, list[Node]] | None:
    """(x, its nodes) for ``Tanh(sqrt(2/pi) * (x + 0.044715 * x**3))`` (GELU's tanh approximation, as
    transformers' GPT-2 "gelu_new" and Keras write it; ``x**3`` as a Power or any product of x's and constants)."""
    scaled = tanh.input_value(0).node
    inner = _split(scaled, math.sqrt(2 / math.pi)) if scaled.type_name == "Multiply" else None
    if inner is None or _sole_consumer(scaled) is not tanh or inner.node.type_name != "Add" \
            or _sole_consumer(inner.node) is not scaled:
        return None
    a, b = inner.node.input_values()
    for x, cubic in ((a, b), (b, a)):
        nodes: list[Node] = []
        term = _monomial(cubic, x, nodes)
        if term is not None and term[1] == 3 and abs(term[0] - 0.044715) <= 1e-5 and cubic != x:
            return x, [*nodes, inner.node, scaled, tanh]
    return None


def _half_plus_half(heart: Node, x: Output) -> list[Node] | None:
    """[Multiply, Add, Multiply] when ``heart``'s value t goes on as ``x * (t * 0.5 + 0.5)`` (Keras' spelling)."""
    half = _sole_consumer(heart)
    if half is None or half.type_name != "Multiply" or _split(half, 0.5) is None:
        return None
    add = _sole_consumer(half)
    if add is None or add.type_name != "Add" or _split(add, 0.5) is None:
        return None
    last = _sole_consumer(add)
    if last is None or last.type_name != "Multiply" or x not in last.input_values():
        return None
    return [half, add, last]


def match_gelu(heart: Node) -> tuple[Output, Node, list[Node], str] | None:
    """(x, the node whose output is the GELU, the nodes it replaces, approximation mode) for an Erf or a Tanh at
    the heart of one, else None."""
    found = _erf_heart(heart) if heart.type_name == "Erf" else _tanh_heart(heart) if heart.type_name == "Tanh" \
        else None
    if found is None:
        return None
    x, nodes = found
    mode = "ERF" if heart.type_name == "Erf" else "TANH"
    half_form = _half_plus_half(heart, x)  # x * (0.5 * t + 0.5)
    if half_form is not None:
        return x, half_form[-1], [*nodes, *half_form], mode
    add = _sole_consumer(heart)
    if add is None or add.type_name != "Add" or _split(add, 1.0) is None:
        return None
    mul = _sole_consumer(add)
    if mul is None or mul.type_name != "Multiply":
        return None
    other = [v for v in mul.input_values() if v.node is not add]
    if len(other) != 1:
        return None
    o = other[0]
    if o == x:  # Mul(Mul(x, 1 + erf), 0.5)
        last = _sole_consumer(mul)
        if last is None or last.type_name != "Multiply" or _split(last, 0.5) is None:
            return None
        return x, last, [*nodes, add, mul, last], mode
    half = o.node  # Mul(Mul(x, 0.5), 1 + erf)
    if half.type_name != "Multiply" or _split(half, 0.5) != x or _sole_consumer(half) is not mul:
        return None
    return x, mul, [*nodes, add, half, mul], mode


class GeluFusion(InPlacePass):
    """Replace each erf-form GELU subgraph with one ``Gelu`` (approximation_mode ERF), each tanh-form one with a
    ``Gelu`` of approximation_mode TANH.

    >>> GeluFusion()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = match_gelu(node)
            if found is None:
                continue
            x, last, replaced, mode = found
            gelu = Gelu(x, name=last.friendly_name, approximation_mode=mode)
            replace_output_update_name(last.output(0), gelu.output(0))
            for n in replaced:
                n.detach()
            modified = True
        return PassResult(model, modified)
