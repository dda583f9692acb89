"""OpenVINO's RNNSequence, GRUSequence and LSTMSequence (opset5).

Layouts are OpenVINO's: ``X`` [batch, seq, input], states [batch, dirs, hidden],
``sequence_lengths`` [batch], ``W`` [dirs, gates*hidden, input], ``R`` [dirs, gates*hidden, hidden],
``B`` [dirs, gates*hidden] (the sum of input and recurrent biases; GRU with
``linear_before_reset`` has a fourth block, the recurrent bias of the hidden gate).
Outputs: ``Y`` [batch, dirs, seq, hidden], ``Ho`` (and ``Co``) [batch, dirs, hidden].
Gate orders: LSTM ``f, i, c, o``; GRU ``z, r, h``.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops import _rnn_engine as eng


class _Sequence(Node):
    """Shared attributes, shape inference and driver of the opset5 sequence ops."""

    version = "opset5"
    hidden_size = Attr("int")
    direction = Attr("str", "forward")
    activations = Attr("strs", None)
    activations_alpha = Attr("floats", [])
    activations_beta = Attr("floats", [])
    clip = Attr("float", 0.0)
    default_activations: tuple[str, ...] = ()
    num_states = 1

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        x = self.get_input_partial_shape(0)
        if x.rank.is_static and x.rank.get_length() != 3:
            raise ValidationError(f"X must be 3-D [batch, seq, input], got {x}")
        batch, seq = (x[0], x[1]) if x.rank.is_static else (Dimension(), Dimension())
        nd = len(eng.directions(self.direction))
        hid = self.hidden_size
        return ([(et, PartialShape([batch, nd, seq, hid]))]
                + [(et, PartialShape([batch, nd, hid]))] * self.num_states)

    def _activations(self) -> list[eng.Activation]:
        names = self.activations if self.activations else list(self.default_activations)
        if len(names) != len(self.default_activations):
            raise ValidationError(f"expected {len(self.default_activations)} activations, got {names}")
        return [eng.make_activation(n, _at(self.activations_alpha, i), _at(self.activations_beta, i))
                for i, n in enumerate(names)]

    def make_step(self, W: np.ndarray, R: np.ndarray, B: np.ndarray, acts: list[eng.Activation]):
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        ns = self.num_states
        x, states = inputs[0], inputs[1:1 + ns]
        lens, W, R, B = inputs[1 + ns:5 + ns]
        ct = eng.compute_dtype(x.dtype)
        X = x.astype(ct)
        acts = self._activations()
        ys, finals = [], []
        for d, reverse in enumerate(eng.directions(self.direction)):
            step = self.make_step(W[d].astype(ct), R[d].astype(ct), B[d].astype(ct), acts)
            y, fin = eng.run_sequence(step, X, np.asarray(lens).astype(np.int64),
                                      tuple(s[:, d].astype(ct) for s in states), reverse)
            ys.append(y)
            finals.append(fin)
        outs = [np.stack(ys, axis=1)] + [np.stack([f[k] for f in finals], axis=1) for k in range(ns)]
        return [o.astype(x.dtype, copy=False) for o in outs]


def _at(values: list[float], i: int) -> float | None:
    return values[i] if i < len(values) else None


@register_op
class RNNSequence(_Sequence):
    """Inputs: X, initial_hidden_state, sequence_lengths, W, R, B."""

    type_name, num_inputs, num_outputs = "RNNSequence", (6, 6), 2
    default_activations, num_states = ("tanh",), 1

    def make_step(self, W, R, B, acts):
        return eng.RnnStep({"i": W}, {"i": R}, {"i": B}, acts, self.clip)


@register_op
class GRUSequence(_Sequence):
    """Inputs: X, initial_hidden_state, sequence_lengths, W, R, B."""

    type_name, num_inputs, num_outputs = "GRUSequence", (6, 6), 2
    default_activations, num_states = ("sigmoid", "tanh"), 1
    linear_before_reset = Attr("bool", False)

    def make_step(self, W, R, B, acts):
        return gru_step(W, R, B, acts, self.clip, self.linear_before_reset)


@register_op
class LSTMSequence(_Sequence):
    """Inputs: X, initial_hidden_state, initial_cell_state, sequence_lengths, W, R, B."""

    type_name, num_inputs, num_outputs = "LSTMSequence", (7, 7), 3
    default_activations, num_states = ("sigmoid", "tanh", "tanh"), 2

    def make_step(self, W, R, B, acts):
        return lstm_step(W, R, B, acts, self.clip)


def lstm_step(W: np.ndarray, R: np.ndarray, B: np.ndarray, acts: list, clip: float) -> eng.LstmStep:
    """An LSTM step from OpenVINO-layout weights (gate order f, i, c, o; B = Wb + Rb)."""
    return eng.LstmStep(eng.split_gates(W, "fico"), eng.split_gates(R, "fico"), eng.split_gates(B, "fico"),
                        acts, clip)


def gru_step(W: np.ndarray, R: np.ndarray, B: np.ndarray, acts: list, clip: float, lbr: bool) -> eng.GruStep:
    """A GRU step from OpenVINO-layout weights (gate order z, r, h; B [3H], or [4H] with lbr)."""
    hid = R.shape[-1]
    want = 4 * hid if lbr else 3 * hid
    if B.shape[0] != want:
        raise ValidationError(f"GRU bias must have {want} elements (linear_before_reset={lbr}), got {B.shape[0]}")
    bias = eng.split_gates(B[:3 * hid], "zrh")
    rb = {g: np.zeros_like(v) for g, v in bias.items()}
    if lbr:
        rb["h"] = B[3 * hid:]
    return eng.GruStep(eng.split_gates(W, "zrh"), eng.split_gates(R, "zrh"), bias, rb, acts, clip, lbr)
