"""FakeQuantize (opset1): quantize to ``levels`` steps and map back to the output range, in float.

``x <= min(input_low, input_high)`` gives ``output_low``, ``x > max(input_low, input_high)`` gives
``output_high``; in between, ``round((x - input_low) / (input_high - input_low) * (levels - 1))``
(half to even) is scaled onto ``[output_low, output_high]``. The four limits broadcast to ``x``.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op


@register_op
class FakeQuantize(Node):
    """``(x, input_low, input_high, output_low, output_high)`` -> ``x`` snapped to ``levels`` values."""

    type_name, version, num_inputs = "FakeQuantize", "opset1", (5, 5)
    levels = Attr("int")
    auto_broadcast = Attr("str", "numpy")

    def infer(self) -> list:
        if self.levels < 2:
            raise ValidationError(f"levels must be at least 2, got {self.levels}")
        if self.auto_broadcast not in ("numpy", "none"):
            raise ValidationError(f"auto_broadcast '{self.auto_broadcast}' is not supported")
        shape = self.get_input_partial_shape(0)
        for i in range(1, 5):
            shape = broadcast_shapes(shape, self.get_input_partial_shape(i), "FakeQuantize")
        return [(self.get_input_element_type(0), shape)]

    def evaluate(self, inputs: list) -> list:
        x, in_lo, in_hi, out_lo, out_hi = (np.asarray(a, np.float64) for a in inputs)
        steps = self.levels - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.rint((x - in_lo) / (in_hi - in_lo) * steps) / steps * (out_hi - out_lo) + out_lo
        y = np.where(x <= np.minimum(in_lo, in_hi), out_lo, np.where(x > np.maximum(in_lo, in_hi), out_hi, q))
        return [np.asarray(y).astype(inputs[0].dtype)]
