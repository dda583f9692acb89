"""ScaleShiftFusion: ``x * a + b`` with constant ``a``, ``b`` (and a ReLU after it) that no convolution took
becomes one :class:`~.fused_ops.FusedScaleShift`: one pass over ``x`` (oneDNN's binary multiply with the add and
the ReLU as post-ops) instead of three.

Pre-activation networks normalize the input of a convolution, not its output: DenseNet's every layer runs
``BatchNorm -> ReLU`` on the concatenation of all earlier feature maps (62 of them in DenseNet-121), which
LinearFolding turns into ``x * a + b`` but cannot fold into the Concat that makes ``x``. Runs after the convolution
fusion (which takes such steps after a convolution as its post-ops first) and the LayerNorm fusion.

Matched: ``Add(Multiply(x, a), b)``, operands in either order, ``x`` a non-constant float 4-D tensor of static
shape, ``a`` and ``b`` constants of one value per channel (or one value), the Multiply read only by the Add; a
Relu that alone reads the Add joins.
"""

from __future__ import annotations

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output
from vinerun.plugins.cpu.fused_ops import FusedScaleShift
from vinerun.transformations.fusions import _FLOATS, _per_channel, _sole_consumer
from vinerun.transformations.pass_infra import ReplaceMatches

_Match = tuple[list[Node], Output, Output, Output, str]  # (the nodes, the last one last; x, scale, shift, activation)


def _split(node: Node) -> tuple[Output, Output] | None:
    """(the non-constant operand, the constant one) of a binary node."""
    a, b = node.input_values()
    if isinstance(b.node, Constant) and not isinstance(a.node, Constant):
        return a, b
    if isinstance(a.node, Constant) and not isinstance(b.node, Constant):
        return b, a
    return None


def _keeps(node: Node, x: Output) -> bool:
    return x.partial_shape.is_static and node.get_output_partial_shape(0) == x.partial_shape


def _fused(match: _Match) -> FusedScaleShift:
    nodes, x, scale, shift, activation = match
    return FusedScaleShift(x, scale, shift, activation=activation, name=nodes[-1].friendly_name)


class ScaleShiftFusion(ReplaceMatches):
    """Fuse ``[Relu](x * a + b)`` with constant ``a``, ``b`` into ``FusedScaleShift(x, a, b)``."""

    def __init__(self) -> None:
        super().__init__(_fused)

    def match(self, node: Node) -> _Match | None:
        if node.type_name != "Add" or node.get_output_element_type(0).get_type_name() not in _FLOATS:
            return None
        outer = _split(node)
        if outer is None or outer[0].node.type_name != "Multiply" or _sole_consumer(outer[0].node) is not node:
            return None
        inner = _split(outer[0].node)
        if inner is None:
            return None
        x, scale = inner
        et = node.get_output_element_type(0).get_type_name()
        if (not (_keeps(outer[0].node, x) and _keeps(node, x)) or len(x.partial_shape) != 4
                or not all(_per_channel(c.node.get_value(), 4, et, c) for c in (scale, outer[1]))):
            return None  # (one value per channel, or one value: not a LayerNorm's scale over the last axis)
        nodes = [outer[0].node, node]
        relu = _sole_consumer(node)
        if relu is not None and relu.type_name == "Relu":
            return [*nodes, relu], x, scale, outer[1], "relu"
        return nodes, x, scale, outer[1], ""

    def covered(self, match: _Match) -> tuple[Node, list[Node]]:
        return match[0][-1], match[0]
