"""Constant folding: nodes whose inputs are all Constants become Constants.

:class:`ConstantFolding` applies the rule of :mod:`vinerun.ir.folding` (which the ONNX frontend also
uses while it translates) to a whole model with the reference ops.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.folding import MAX_FOLD_ELEMENTS, fold_values
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.transformations.pass_infra import InPlacePass, PassResult


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

