"""Element-wise activations: Relu, Sigmoid, Tanh, Clamp, Elu, ... (opset1 and later)."""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Attr
from vinerun.ir.registry import register_op
from vinerun.ops._base import UnaryElementwise


@register_op
class Relu(UnaryElementwise):
    type_name = "Relu"

    def fn(self, x):
        return np.maximum(x, np.zeros((), x.dtype))


@register_op
class Sigmoid(UnaryElementwise):
    type_name = "Sigmoid"

    def fn(self, x):
        return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


@register_op
class Tanh(UnaryElementwise):
    type_name = "Tanh"

    def fn(self, x):
        return np.tanh(x)


@register_op
class Clamp(UnaryElementwise):
    type_name = "Clamp"
    min = Attr("float")
    max = Attr("float")

    def fn(self, x):
        return np.clip(x, self.min, self.max)
