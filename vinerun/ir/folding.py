"""The constant-folding rule: a node's output values, when they are known while building the graph.

Used by the ONNX frontend as it translates (so shape arithmetic such as Shape -> Gather -> Concat ->
Reshape folds as it is built) and by the ConstantFolding pass (vinerun.transformations).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir.node import Node

#: do not fold results bigger than this many elements (they would bloat the model)
MAX_FOLD_ELEMENTS = 1 << 20

#: ops folded whatever their size: the output has exactly the input's elements (nothing bloats) and folding is
#: one pass over them; a decompression Convert (f16 weights -> f32, as OpenVINO's IR writer stores every
#: model) would otherwise convert a large table, e.g. an embedding, on every inference
ANY_SIZE = frozenset({"Convert"})

#: ops whose value is not a function of their inputs: random generators, and the state ops
NOT_FOLDABLE = frozenset({"RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli",
                          "Multinomial", "Dropout", "ReadValue", "Assign", "Parameter", "Constant", "Result"})


def _elements(shape: Any) -> int:
    return int(np.prod([int(d) for d in shape]))


def fold_values(node: Node, max_elements: int = MAX_FOLD_ELEMENTS) -> list[np.ndarray] | None:
    """The node's output values if they are known now and small, else None.

    They are known when the node can tell its value from its input shapes (``static_value``, as
    ShapeOf does) or when every input is a Constant and the node is deterministic.
    """
    if node.type_name in NOT_FOLDABLE or getattr(node, "nondeterministic", False):
        return None
    static_value = getattr(node, "static_value", None)
    value = static_value() if callable(static_value) else None
    if value is not None:
        return [np.asarray(value)]
    sources = [o for o in node.input_values() if o is not None]
    if not all(o.node.type_name == "Constant" for o in sources):
        return None
    if node.type_name in ANY_SIZE:
        max_elements = max(max_elements, sum(o.node.get_value().size for o in sources))
    if sum(o.node.get_value().size for o in sources) > max_elements or any(
            o.partial_shape.is_static and _elements(o.partial_shape) > max_elements for o in node.outputs()):
        return None
    values = node.evaluate([None if o is None else o.node.get_value() for o in node.input_values()])
    if any(not isinstance(v, (np.ndarray, np.generic)) or np.size(v) > max_elements for v in values):
        return None  # sequences and empty optionals stay as they are
    return [np.asarray(v) for v in values]
