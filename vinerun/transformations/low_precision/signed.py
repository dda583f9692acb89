"""Int8 tensors read as a MatMul's runtime weights are made signed where they are made: oneDNN's int8 matmul
takes s8 weights only, and a u8 tensor ``q`` with zero point ``z`` is the s8 tensor ``q - 128`` with zero point
``z - 128`` (the same real values). An int8 layer or a QuantizeLinear that writes one (attention's K and V, as
onnxruntime quantizes them to u8) writes the s8 form instead, and the views between (Reshape, Transpose)
carry it, so the matmul reads it as it is, with no conversion pass per call.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.transformations.low_precision.ops import QuantizedNode
from vinerun.transformations.low_precision.params import Quantization, activation_params, constant_value
from vinerun.transformations.pass_infra import InPlacePass, PassResult

VIEWS = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze"})


def _signed(q: Quantization) -> Quantization:
    return replace(q, zero_point=q.zero_point - 128, dtype=np.dtype(np.int8))


def _readers(value: Output) -> list[tuple[Node, int]]:
    """(node, input index) of the live readers (a fused-away DequantizeLinear lingers with no readers)."""
    return [(t.get_node(), t.get_index()) for t in value.get_target_inputs()
            if t.get_node().type_name == "Result" or any(o.get_target_inputs() for o in t.get_node().outputs())]


class SignedRuntimeWeights(InPlacePass):
    """u8 outputs of int8 layers read only (through views) as runtime weights become s8 (see the module)."""

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if isinstance(node, QuantizedNode) and isinstance(node.layer.output, Quantization) and \
                    node.layer.output.dtype == np.uint8:
                modified |= self._sign(node)
            elif node.type_name == "QuantizeLinear" and (q := activation_params(node)) is not None and \
                    q.dtype == np.uint8 and node.get_input_size() > 2:
                modified |= self._sign(node)
        return PassResult(model, modified)

    def _sign(self, producer: Node) -> bool:
        views, consumers = [], []
        pending = [producer.output(0)]
        while pending:
            value = pending.pop()
            for reader, index in _readers(value):
                if reader.type_name in VIEWS and index == 0:
                    views.append(reader)
                    pending.append(reader.output(0))
                elif isinstance(reader, QuantizedNode) and reader.layer.runtime_weights and index == 1:
                    consumers.append(reader)
                else:
                    return False  # someone else reads the u8 integers
        if not consumers:
            return False
        if isinstance(producer, QuantizedNode):
            producer.layer.output = _signed(producer.layer.output)  # type: ignore[arg-type]
        else:  # a QuantizeLinear: its zero point's type is its output's
            zp = int(np.asarray(constant_value(producer.input_value(2))).reshape(-1)[0])
            producer.set_argument(2, Constant(np.int8(zp - 128), name=f"{producer.friendly_name}/signed_zero_point"))
        for consumer in consumers:
            consumer.layer.weights = _signed(consumer.layer.weights)  # type: ignore[arg-type]
        for node in [producer, *views]:
            node.validate_and_infer_types()
        for consumer in consumers:
            consumer.validate_and_infer_types()
        return True
