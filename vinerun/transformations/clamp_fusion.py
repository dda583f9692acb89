"""Minimum and Maximum with constant bounds become one Relu or Clamp (as OpenVINO's ClampFusion).

OpenVINO's ONNX reader writes a Clip whose bounds are initializers (ReLU6 as PyTorch exports MobileNetV2) as
``Minimum(Maximum(x, 0), 6)``, and IR saved from it (NNCF's quantized models too) keeps the pair: two
element-wise passes over a feature map, outside the convolution before them. Rewritten:

- ``Maximum(x, lo)`` -> ``Relu(x)`` (lo = 0) or ``Clamp(x, lo, +inf)``;
- ``Minimum(x, hi)`` -> ``Clamp(x, -inf, hi)``;
- a Clamp (or Relu) of a Relu or Clamp read only by it -> one Clamp of the tightest bounds;

where the bound is a one-element constant (either operand), ``x`` is floating point and keeps its shape (the
constant does not broadcast it larger). The convolution fusion then takes the result as one post-op.
"""

from __future__ import annotations

import math

from vinerun.ir.node import Node, Output
from vinerun.ops.activations import Clamp, Relu
from vinerun.transformations.fusions import _FLOATS, _sole_consumer, keeps_value, scalar_constant
from vinerun.transformations.pass_infra import ReplaceMatches


def _bounds(node: Node) -> tuple[Output, float, float] | None:
    """(x, lo, hi) when ``node`` clips x to [lo, hi]: a Relu, a Clamp, or a Maximum / Minimum with a one-element
    constant of either operand that leaves x's shape as it is."""
    if node.type_name == "Relu":
        return node.input_value(0), 0.0, math.inf
    if node.type_name == "Clamp":
        return node.input_value(0), float(node.min), float(node.max)  # type: ignore[attr-defined]
    if node.type_name not in ("Maximum", "Minimum"):
        return None
    a, b = node.input_values()
    for x, bound in ((a, b), (b, a)):
        value = scalar_constant(bound)
        if value is None or math.isnan(value) or x.element_type.get_type_name() not in _FLOATS:
            continue
        if not keeps_value(node, x):
            continue
        return (x, value, math.inf) if node.type_name == "Maximum" else (x, -math.inf, value)
    return None


def _clip(match: tuple[Node, Output, float, float, list[Node]]) -> Node:
    node, x, lo, hi, _ = match
    if lo == 0.0 and hi == math.inf:
        return Relu(x, name=node.friendly_name)
    return Clamp(x, min=lo, max=hi, name=node.friendly_name)


class MinMaxToClamp(ReplaceMatches):
    """Replace constant-bound Maximum / Minimum nodes, and clips of clips, by one Relu or Clamp each.

    >>> MinMaxToClamp()(model).modified
    True
    """

    def __init__(self) -> None:
        super().__init__(_clip)

    def match(self, node: Node) -> tuple[Node, Output, float, float, list[Node]] | None:
        """(the node, x, lo, hi, the nodes the clip replaces; x's readers must be the new node alone, for the
        fusions after), or None. Producers come first: a Minimum sees its Maximum already rewritten."""
        if node.type_name not in ("Maximum", "Minimum", "Clamp") or not node.output(0).get_target_inputs():
            return None
        found = _bounds(node)
        if found is None:
            return None
        x, lo, hi = found
        replaced = [node]
        inner = _bounds(x.node) if x.node.type_name in ("Relu", "Clamp") else None
        if inner is not None and _sole_consumer(x.node) is node:
            replaced.append(x.node)
            x, lo, hi = inner[0], max(lo, inner[1]), min(hi, inner[2])
        elif node.type_name == "Clamp":
            return None  # nothing to merge
        if lo > hi:
            return None  # an empty range: Clamp's bounds must be ordered; left as written
        return node, x, lo, hi, replaced

    def covered(self, match: tuple[Node, Output, float, float, list[Node]]) -> tuple[Node, list[Node]]:
        return match[0], match[4]
