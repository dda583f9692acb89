"""Dequantization moved through precision-preserving ops, and requantizations that change nothing removed.

``MaxPool``, ``Reshape``, ``Squeeze``, ``Unsqueeze``, ``Transpose`` and ``Concat`` (all inputs with the same
parameters) give the same integers whether they run before or after a per-tensor dequantization (the
scale is positive, so the maximum is the same element): ``op(DequantizeLinear(q))`` becomes
``DequantizeLinear(op(q))`` and they run on int8 data. ``QuantizeLinear(DequantizeLinear(q))`` with the same
parameters and type is ``q`` itself. Together they leave ``Q -> DQ -> MaxPool -> Q -> DQ`` as an int8 MaxPool
between the int8 layers.
"""

from __future__ import annotations

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ops.quantization import DequantizeLinear
from vinerun.transformations.low_precision.params import activation_params
from vinerun.transformations.pass_infra import InPlacePass, PassResult

#: ops whose output elements are input elements (or the largest of some): they commute with a dequantization
PRESERVING = frozenset({"MaxPool", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat"})


def _dequantize_of(node: Node, index: int) -> Node | None:
    dq = node.input_value(index).node
    if dq.type_name != "DequantizeLinear" or activation_params(dq) is None:
        return None
    return None if isinstance(dq.input_value(0).node, Constant) else dq


class DequantizationPropagation(InPlacePass):
    """Move per-tensor dequantizations after precision-preserving ops; drop same-parameter Q(DQ(x))."""

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if node.type_name in PRESERVING:
                modified |= self._move(node)
            elif node.type_name == "QuantizeLinear":
                modified |= self._cancel(node)
        return PassResult(model, modified)

    def _move(self, node: Node) -> bool:
        data = range(node.get_input_size()) if node.type_name == "Concat" else (0,)
        dqs = [_dequantize_of(node, i) for i in data]
        if any(dq is None for dq in dqs):
            return False
        params = {activation_params(dq) for dq in dqs}  # type: ignore[arg-type]
        if len(params) != 1:
            return False
        if node.type_name == "MaxPool" and node.get_output_size() > 1 and node.output(1).get_target_inputs():
            return False  # indices read: keep the f32 op as it is
        first = dqs[0]
        assert first is not None  # noqa: S101 - checked above
        inputs = node.input_values()
        for i, dq in zip(data, dqs, strict=True):
            inputs[i] = dq.input_value(0)  # type: ignore[union-attr]
        moved = node.clone_with_new_inputs(inputs)
        moved.set_friendly_name(node.friendly_name)
        extra = [first.input_value(i) for i in range(1, first.get_input_size())]
        dq = DequantizeLinear(moved.output(0), *extra, axis=first.axis, name=f"{node.friendly_name}/dequantize")  # type: ignore[attr-defined]
        replace_output_update_name(node.output(0), dq.output(0))
        for i in range(1, node.get_output_size()):
            replace_output_update_name(node.output(i), moved.output(i))
        node.detach()  # a dead node still counts among its producers' readers
        return True

    def _cancel(self, q: Node) -> bool:
        dq = _dequantize_of(q, 0)
        if dq is None or activation_params(dq) != activation_params(q):
            return False
        source = dq.input_value(0)
        if source.element_type != q.get_output_element_type(0):
            return False
        replace_output_update_name(q.output(0), source)
        q.detach()
        return True
