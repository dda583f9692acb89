"""Constant folding: nodes whose inputs are all Constants become Constants.

:func:`fold_values` is the rule (also used by the ONNX frontend while it translates, so shape
arithmetic such as Shape -> Gather -> Concat -> Reshape folds as it is built);
:class:`ConstantFolding` applies it to a whole model with the reference ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.transformations.pass_infra import InPlacePass, PassResult

#: do not fold results bigger than this many elements (they would bloat the model)
MAX_FOLD_ELEMENTS = 1 << 20

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
    if sum(o.node.get_value().size for o in sources) > max_elements or any(
            o.partial_shape.is_static() and _elements(o.partial_shape) > max_elements for o in node.outputs()):
        return None
    values = node.evaluate([None if o is None else o.node.get_value() for o in node.input_values()])
    if any(not isinstance(v, (np.ndarray, np.generic)) or np.size(v) > max_elements for v in values):
        return None  # sequences and empty optionals stay as they are
    return [np.asarray(v) for v in values]


def _fits(node: Node, values: list[np.ndarray]) -> bool:
    """Whether Constants of ``values`` keep every output's element type and shape."""
    if len(values) != node.get_output_size():
        return False
    for out, v in zip(node.outputs(), values, strict=True):
        et = out.element_type
        if et.is_static() and Type(v.dtype) != et:
            return False
        if not out.partial_shape.compatible(list(v.shape)):
            return False
    return True


class ConstantFolding(InPlacePass):
    """Replace every foldable node by Constants computed with the reference ops.

    Random ops, state ops (ReadValue/Assign) and results over ``max_elements`` are left alone.

    >>> ConstantFolding()(model).modified
    True
    """

    def __init__(self, max_elements: int = MAX_FOLD_ELEMENTS):
        self.max_elements = max_elements

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if isinstance(node, (Parameter, Constant, Result)):
                continue
            values = fold_values(node, self.max_elements)
            if values is None or not _fits(node, values):
                continue
            for out, v in zip(node.outputs(), values, strict=True):
                const = Constant(v, name=f"{node.friendly_name}/folded" if len(values) == 1 else
                                 f"{node.friendly_name}/folded.{out.index}")
                replace_output_update_name(out, const.output(0))
            node.detach()
            modified = True
        return PassResult(model, modified)

