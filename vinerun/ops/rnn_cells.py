"""OpenVINO's single-step recurrent cells: RNNCell (opset1), GRUCell (opset3), LSTMCell (opset4).

Inputs are OpenVINO's: ``X`` [batch, input], states [batch, hidden], ``W`` [gates*hidden, input],
``R`` [gates*hidden, hidden], ``B`` [gates*hidden] (GRU with ``linear_before_reset``: 4*hidden).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops import _rnn_engine as eng
from vinerun.ops.rnn import gru_step, lstm_step


class _Cell(Node):
    """Shared attributes and shape inference of the cells."""

    hidden_size = Attr("int")
    activations = Attr("strs", None)
    activations_alpha = Attr("floats", [])
    activations_beta = Attr("floats", [])
    clip = Attr("float", 0.0)
    default_activations: tuple[str, ...] = ()

    def infer(self) -> list:
        x = self.get_input_partial_shape(0)
        if x.rank.is_static and x.rank.get_length() != 2:
            raise ValidationError(f"X must be 2-D [batch, input], got {x}")
        batch = x[0] if x.rank.is_static else Dimension()
        return [(self.get_input_element_type(0), PartialShape([batch, self.hidden_size]))] * self.num_outputs

    def _activations(self) -> list[eng.Activation]:
        names = self.activations if self.activations else list(self.default_activations)
        if len(names) != len(self.default_activations):
            raise ValidationError(f"expected {len(self.default_activations)} activations, got {names}")
        a, b = self.activations_alpha, self.activations_beta
        return [eng.make_activation(n, a[i] if i < len(a) else None, b[i] if i < len(b) else None)
                for i, n in enumerate(names)]

    def _run(self, step, x: np.ndarray, states: list[np.ndarray]) -> list:
        ct = eng.compute_dtype(x.dtype)
        outs = step(x.astype(ct), *[s.astype(ct) for s in states])
        return [o.astype(x.dtype, copy=False) for o in outs]


@register_op
class RNNCell(_Cell):
    """Inputs: X, initial_hidden_state, W, R, B. ``Ho = f(X W^T + H R^T + B)``."""

    type_name, version, num_inputs, num_outputs = "RNNCell", "opset1", (5, 5), 1
    default_activations = ("tanh",)

    def evaluate(self, inputs: list) -> list:
        x, h, W, R, B = inputs
        ct = eng.compute_dtype(x.dtype)
        step = eng.RnnStep({"i": W.astype(ct)}, {"i": R.astype(ct)}, {"i": B.astype(ct)}, self._activations(),
                           self.clip)
        return self._run(step, x, [h])


@register_op
class GRUCell(_Cell):
    """Inputs: X, initial_hidden_state, W, R, optional B (zeros when absent)."""

    type_name, version, num_inputs, num_outputs = "GRUCell", "opset3", (4, 5), 1
    default_activations = ("sigmoid", "tanh")
    linear_before_reset = Attr("bool", False)

    def evaluate(self, inputs: list) -> list:
        x, h, W, R = inputs[:4]
        ct = eng.compute_dtype(x.dtype)
        hid = self.hidden_size
        B = inputs[4] if len(inputs) > 4 and inputs[4] is not None else np.zeros(
            (4 if self.linear_before_reset else 3) * hid, ct)
        step = gru_step(W.astype(ct), R.astype(ct), B.astype(ct), self._activations(), self.clip,
                        self.linear_before_reset)
        return self._run(step, x, [h])


@register_op
class LSTMCell(_Cell):
    """Inputs: X, initial_hidden_state, initial_cell_state, W, R, B. Outputs Ho, Co (gates f, i, c, o)."""

    type_name, version, num_inputs, num_outputs = "LSTMCell", "opset4", (5, 6), 2
    default_activations = ("sigmoid", "tanh", "tanh")

    def evaluate(self, inputs: list) -> list:
        x, h, c, W, R = inputs[:5]
        ct = eng.compute_dtype(x.dtype)
        B = inputs[5] if len(inputs) > 5 and inputs[5] is not None else np.zeros(4 * self.hidden_size, ct)
        step = lstm_step(W.astype(ct), R.astype(ct), B.astype(ct), self._activations(), self.clip)
        return self._run(step, x, [h, c])
