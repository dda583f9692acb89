"""Fold a freshly built node into a Constant when all its inputs are constants.

Shape arithmetic in ONNX files (Shape -> Gather -> Concat -> Reshape) is mostly constant once the
input shapes are static; folding it while translating lets the consumers infer static shapes.
The rule itself is :func:`vinerun.ir.folding.fold_values`, shared with the constant-folding pass.
"""

from __future__ import annotations

from vinerun.ir.core_ops import Constant
from vinerun.ir.folding import MAX_FOLD_ELEMENTS, fold_values
from vinerun.ir.node import Node, Output

__all__ = ["MAX_FOLD_ELEMENTS", "fold", "fold1"]


def fold(node: Node) -> list[Output]:
    """The node's outputs, replaced by Constants when they are known now and small."""
    values = fold_values(node)
    if values is None:
        return node.outputs()
    node.detach()
    return [Constant(v).output(0) for v in values]


def fold1(node: Node) -> Output:
    """``fold`` for a single-output node."""
    return fold(node)[0]
