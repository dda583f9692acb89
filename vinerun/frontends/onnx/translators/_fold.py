"""Fold a freshly built node into a Constant when all its inputs are constants.

Shape arithmetic in ONNX files (Shape -> Gather -> Concat -> Reshape) is mostly constant once the
input shapes are static; folding it while translating lets the consumers infer static shapes.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output

#: do not fold results bigger than this many elements (they would bloat the model)
MAX_FOLD_ELEMENTS = 1 << 20


def fold(node: Node) -> list[Output]:
    """The node's outputs, replaced by Constants when they are known now and small.

    They are known when the node can tell its value from its input shapes (``static_value``, as
    ShapeOf does) or when every input is a Constant.
    """
    static_value = getattr(node, "static_value", None)
    value = static_value() if callable(static_value) else None
    if value is not None:
        node.detach()
        return [Constant(value).output(0)]
    sources = [o for o in node.input_values() if o is not None]
    if not all(o.node.type_name == "Constant" for o in sources):
        return node.outputs()
    if sum(o.node.get_value().size for o in sources) > MAX_FOLD_ELEMENTS or any(
            o.partial_shape.is_static() and _elements(o.partial_shape) > MAX_FOLD_ELEMENTS for o in node.outputs()):
        return node.outputs()
    values = node.evaluate([None if o is None else o.node.get_value() for o in node.input_values()])
    if any(np.size(v) > MAX_FOLD_ELEMENTS for v in values):
        return node.outputs()
    node.detach()
    return [Constant(np.asarray(v)).output(0) for v in values]


def _elements(shape: object) -> int:
    return int(np.prod([int(d) for d in shape]))  # type: ignore[attr-defined]


def fold1(node: Node) -> Output:
    """``fold`` for a single-output node."""
    return fold(node)[0]
