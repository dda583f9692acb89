"""Swish fusion: ``x * sigmoid(x)`` (SiLU, as exporters write it: EfficientNet, YOLOv5/v8) becomes one Swish.

As a single activation it fuses into the convolution or matrix product that makes ``x`` (a oneDNN post-op),
where the two-node form keeps ``x`` alive for a separate Sigmoid and Multiply. Matched: a Multiply whose operands
are a value ``x`` and ``Sigmoid(x)`` of the same shape and element type, in either order; the Sigmoid goes
when nothing else reads it.
"""

from __future__ import annotations

from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.activations import Swish
from vinerun.transformations.fusions import keeps_value
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def match_swish(mul: Node) -> tuple[Output, Node] | None:
    """(x, the Sigmoid) when ``mul`` is ``x * sigmoid(x)``, else None."""
    if mul.type_name != "Multiply":
        return None
    a, b = mul.input_values()
    for x, s in ((a, b), (b, a)):
        sig = s.node
        if sig.type_name == "Sigmoid" and sig.input_value(0) == x:
            if keeps_value(mul, x):
                return x, sig
    return None


class SwishFusion(InPlacePass):
    """Replace each ``x * sigmoid(x)`` with ``Swish(x)``.

    >>> SwishFusion()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            found = match_swish(node)
            if found is None:
                continue
            x, sigmoid = found
            swish = Swish(x, name=node.friendly_name)
            replace_output_update_name(node.output(0), swish.output(0))
            node.detach()
            if not sigmoid.output(0).get_target_inputs():
                sigmoid.detach()
            modified = True
        return PassResult(model, modified)
