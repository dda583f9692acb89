"""Identity (opset16): passes its input through; openvino writes it for ONNX Identity nodes."""

from __future__ import annotations

from vinerun.ir.registry import register_op
from vinerun.ops._base import UnaryElementwise


@register_op
class Identity(UnaryElementwise):
    """Its input, unchanged."""

    type_name, version = "Identity", "opset16"

    def evaluate(self, inputs: list) -> list:
        return [inputs[0]]
