"""ONNX Dropout when training_mode is not a constant false: identity, or a random mask in training mode."""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.types import Type


@register_op
class Dropout(Node):
    """ONNX Dropout (inputs data, ratio, training_mode; outputs output and a boolean mask).

    Outside training mode, or with ratio 0, the output is the input and the mask is all true.
    In training mode each element is kept with probability 1 - ratio and scaled by 1 / (1 - ratio);
    ``seed`` (when set) makes the draws repeatable.
    """

    type_name, version, num_inputs, num_outputs = "Dropout", "onnx", (1, 3), 2
    seed = Attr("int", None)

    def infer(self) -> list:
        ps = self.get_input_partial_shape(0)
        return [(self.get_input_element_type(0), ps), (Type.boolean, ps)]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        ratio = 0.5 if len(inputs) < 2 or inputs[1] is None else float(np.asarray(inputs[1]).reshape(-1)[0])
        training = len(inputs) > 2 and inputs[2] is not None and bool(np.asarray(inputs[2]).reshape(-1)[0])
        if not training or ratio == 0.0:
            return [x, np.ones(x.shape, np.bool_)]
        rng = np.random.default_rng(self.seed)
        mask = rng.random(x.shape) >= ratio
        scale = np.asarray(1.0 / (1.0 - ratio), np.float64)
        return [np.where(mask, x * scale, 0).astype(x.dtype), mask]
