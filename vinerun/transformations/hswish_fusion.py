"""HSwish fusion: hard-swish as exporters write it becomes one HSwish (as OpenVINO's HSwishFusion).

MobileNetV3 / PP-LCNet exports (PaddlePaddle, TensorFlow, older PyTorch) write ``x * relu6(x + 3) / 6`` as
Add, Clip, Multiply and Divide: four passes over a feature map, and a chain the convolution fusion cannot take.
As one HSwish it becomes a post-op of the convolution that makes ``x``. Matched, ``c = Clamp(x + 3, 0, 6)``:

- ``(x * c) / 6`` and ``(x * c) * (1/6)``;
- ``x * (c / 6)`` and ``x * (c * (1/6))``;
- ``x * HSigmoid(x)`` and ``x * HardSigmoid(x, alpha=1/6, beta=0.5)``.

The operands may come in either order; the intermediate nodes must be read only inside the pattern.
"""

from __future__ import annotations

from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.activations import HSwish
from vinerun.transformations.fusions import _sole_consumer, is_scalar, keeps_value
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _sole(node: Node, reader: Node) -> bool:
    return _sole_consumer(node) is reader


def _close(value: float, want: float) -> bool:
    return abs(value - want) <= 1e-5 * max(1.0, abs(want))


def _operands(node: Node) -> list[tuple[Output, Output]]:
    a, b = node.input_values()
    return [(a, b), (b, a)]


def _relu6_of_x_plus_3(out: Output, reader: Node) -> tuple[Output, list[Node]] | None:
    """(x, [the Clamp, the Add]) when ``out`` is ``Clamp(x + 3, 0, 6)`` read only by ``reader``."""
    clamp = out.node
    if clamp.type_name != "Clamp" or not _sole(clamp, reader):
        return None
    if not (_close(float(clamp.min), 0.0) and _close(float(clamp.max), 6.0)):  # type: ignore[attr-defined]
        return None
    add = clamp.input_value(0).node
    if add.type_name != "Add" or not _sole(add, clamp):
        return None
    for x, three in _operands(add):
        if is_scalar(three, 3.0):
            return x, [clamp, add]
    return None


def _hard_sigmoid_of(out: Output, reader: Node) -> tuple[Output, list[Node]] | None:
    """(x, its nodes) when ``out`` is hard-sigmoid of x (``c / 6``, ``c * (1/6)``, HSigmoid, HardSigmoid)."""
    node = out.node
    if not _sole(node, reader):
        return None
    if node.type_name == "HSigmoid":
        return node.input_value(0), [node]
    if node.type_name == "HardSigmoid":
        if is_scalar(node.input_value(1), 1 / 6) and is_scalar(node.input_value(2), 0.5):
            return node.input_value(0), [node]
        return None
    scaled = _scaled_by_sixth(node)
    if scaled is None:
        return None
    relu6 = _relu6_of_x_plus_3(scaled, node)
    return None if relu6 is None else (relu6[0], [node, *relu6[1]])


def _scaled_by_sixth(node: Node) -> Output | None:
    """y when ``node`` is ``y / 6`` or ``y * (1/6)``."""
    if node.type_name == "Divide":
        y, six = node.input_values()
        return y if is_scalar(six, 6.0) else None
    if node.type_name == "Multiply":
        for y, k in _operands(node):
            if is_scalar(k, 1 / 6):
                return y
    return None


def match_hswish(node: Node) -> tuple[Output, list[Node]] | None:
    """(x, the nodes replaced) when ``node`` computes hard-swish of x, else None."""
    if node.get_output_size() != 1:
        return None
    # (x * relu6(x + 3)) / 6, (x * relu6(x + 3)) * (1/6)
    product = _scaled_by_sixth(node)
    if product is not None and product.node.type_name == "Multiply" and _sole(product.node, node):
        for x, c in _operands(product.node):
            relu6 = _relu6_of_x_plus_3(c, product.node)
            if relu6 is not None and relu6[0] == x:
                return x, [node, product.node, *relu6[1]]
    # x * hard_sigmoid(x)
    if node.type_name == "Multiply":
        for x, h in _operands(node):
            found = _hard_sigmoid_of(h, node)
            if found is not None and found[0] == x:
                return x, [node, *found[1]]
    return None


class HSwishFusion(InPlacePass):
    """Replace each hard-swish pattern (see the module docstring) with ``HSwish(x)``.

    >>> HSwishFusion()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if node.get_output_size() != 1 or not node.output(0).get_target_inputs():
                continue  # detached by an earlier match in this pass
            found = match_hswish(node)
            if found is None:
                continue
            x, nodes = found
            if not keeps_value(node, x):
                continue
            hswish = HSwish(x, name=node.friendly_name)
            replace_output_update_name(node.output(0), hswish.output(0))
            for n in nodes:
                n.detach()
            modified = True
        return PassResult(model, modified)
