"""Constant folding: nodes whose inputs are all Constants become Constants.

:class:`ConstantFolding` applies the rule of :mod:`vinerun.ir.folding` (which the ONNX frontend also
uses while it translates) to a whole model with the reference ops.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vinerun.errors import ValidationError
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

    Random ops, state ops (ReadValue/Assign), results over ``max_elements`` and nodes ``keep`` says to keep
    (e.g. :func:`~.decompression.is_decompression`: weight dequantization an int8 kernel takes) are left alone.

    >>> ConstantFolding()(model).modified
    True
    """

    def __init__(self, max_elements: int = MAX_FOLD_ELEMENTS, keep: Callable[[Node], bool] | None = None):
        self.max_elements = max_elements
        self.keep = keep

    def call(self, model: Model) -> PassResult:
        modified = False
        refined: set[int] = set()  # nodes (ids) whose outputs became constants or got a more precise shape
        for node in model.get_ordered_ops():
            if isinstance(node, (Parameter, Constant)):
                continue
            if any(v is not None and id(v.node) in refined for v in node.input_values()) and _refine(node):
                refined.add(id(node))  # e.g. [?, 128, 384] + a folded [1, 128, 384] is [1, 128, 384]: a ShapeOf
                modified = True        # downstream then folds too, and the Reshapes after it get static shapes
            if isinstance(node, Result) or self.keep is not None and self.keep(node):
                continue
            values = fold_values(node, self.max_elements)
            if values is None or not _fits(node, values):
                continue
            for out, v in zip(node.outputs(), values, strict=True):
                const = Constant(v, name=f"{node.friendly_name}/folded" if len(values) == 1 else
                                 f"{node.friendly_name}/folded.{out.index}")
                replace_output_update_name(out, const.output(0))
                refined.add(id(const))
            node.detach()
            modified = True
        return PassResult(model, modified)


def _refine(node: Node) -> bool:
    """Infer ``node``'s outputs again (its inputs changed); whether they changed. A node whose inference now
    fails keeps what it had (the graph was valid before this pass)."""
    before = [(o.element_type, o.partial_shape) for o in node._outputs]
    try:
        node.validate_and_infer_types()
    except ValidationError:
        for o, (et, ps) in zip(node._outputs, before, strict=False):
            o.element_type, o.partial_shape = et, ps
        return False
    after = [(o.element_type, o.partial_shape) for o in node._outputs]
    return len(after) != len(before) or any(a[0] != b[0] or str(a[1]) != str(b[1])
                                            for a, b in zip(after, before, strict=True))

