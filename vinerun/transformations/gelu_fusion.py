"""GELU fusion: the erf form ``x * 0.5 * (1 + erf(x / sqrt(2)))`` (as ONNX exporters write it) becomes one Gelu.

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
from vinerun.transformations.fusions import _sole_consumer
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _scalar(out: Output, want: float) -> bool:
    if not isinstance(out.node, Constant):
        return False
    v = out.node.get_value()
    return v.size == 1 and abs(float(v.reshape(())) - want) <= 1e-5 * max(1.0, abs(want))


def _split(node: Node, want: float) -> Output | None:
    """The non-constant operand of a binary ``node`` whose other operand is the scalar ``want``."""
    a, b = node.input_values()
    if _scalar(b, want):
        return a
    if _scalar(a, want):
        return b
    return None


def match_gelu(erf: Node) -> tuple[Output, Node, list[Node]] | None:
    """(x, the node whose output is the GELU, the nodes it replaces) for an Erf at the heart of one, else None."""
    if erf.type_name != "Erf":
        return None
    scaled = erf.input_value(0).node
    if scaled.type_name == "Divide":
        x = scaled.input_value(0) if _scalar(scaled.input_value(1), math.sqrt(2)) else None
    elif scaled.type_name == "Multiply":
        x = _split(scaled, 1 / math.sqrt(2))
    else:
        return None
    if x is None or _sole_consumer(scaled) is not erf:
        return None
    add = _sole_consumer(erf)
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
        return x, last, [scaled, erf, add, mul, last]
    half = o.node  # Mul(Mul(x, 0.5), 1 + erf)
    if half.type_name != "Multiply" or _split(half, 0.5) != x or _sole_consumer(half) is not mul:
        return None
    return x, mul, [scaled, erf, add, half, mul]


class GeluFusion(InPlacePass):
    """Replace each erf-form GELU subgraph with one ``Gelu`` (approximation_mode ERF).

    >>> GeluFusion()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = match_gelu(node)
            if found is None:
                continue
            x, last, replaced = found
            gelu = Gelu(x, name=last.friendly_name, approximation_mode="ERF")
            replace_output_update_name(last.output(0), gelu.output(0))
            for n in replaced:
                n.detach()
            modified = True
        return PassResult(model, modified)
