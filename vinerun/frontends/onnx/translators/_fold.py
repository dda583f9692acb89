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
    """The node's outputs, replaced by Constants when every input is a Constant and outputs are small."""
    sources = [o for o in node.input_values() if o is not None]
    shape_of = getattr(node, "static_value", None)
    value = shape_of() if callable(shape_of) else None
    if value is not None:
        node.detach()
        return [Constant(value).output(0)]
    if not all(o.node.type_name == "Constant" for o in sources):
        return node.outputs()
    for out in node.outputs():
        ps = out.partial_shape
        if not ps.is_static() or int(np.prod([int(d) for d in ps])) > MAX_FOLD_ELEMENTS:
            return node.outputs()
    values = node.evaluate([None if o is None else o.node.get_value() for o in node.input_values()])
    node.detach()
    return [Constant(np.asarray(v)).output(0) for v in values]


def fold1(node: Node) -> Output:
    """``fold`` for a single-output node."""
    return fold(node)[0]
