"""ONNX's RNN, GRU and LSTM ops with ONNX semantics (gate orders, layouts, optional inputs).

Inputs: ``X, W, R, B?, sequence_lens?, initial_h?, (initial_c?, P?)``; absent optional inputs are
``None``. Outputs ``Y`` ([seq, dirs, batch, hidden], or [batch, seq, dirs, hidden] with
``layout=1``), ``Y_h`` (and ``Y_c`` for LSTM) ([dirs, batch, hidden], or [batch, dirs, hidden]).
OpenVINO's RNNSequence / GRUSequence / LSTMSequence (``vinerun.ops.rnn``) share the recurrence.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops import _rnn_engine as eng


class _OnnxRecurrent(Node):
    """Shared attributes, shape inference and the per-direction driver."""

    version = "onnx"
    num_inputs = (3, 8)
    hidden_size = Attr("int")
    direction = Attr("str", "forward")
    activations = Attr("strs", [])
    activation_alpha = Attr("floats", [])
    activation_beta = Attr("floats", [])
    clip = Attr("float", 0.0)
    layout = Attr("int", 0)
    #: gate letters in ONNX order, default activations per direction, number of state outputs
    gates = ""
    default_activations: tuple[str, ...] = ()
    num_states = 1

    def _dims(self) -> tuple[Dimension, Dimension]:
        x = self.get_input_partial_shape(0)
        if x.rank.is_dynamic:
            return Dimension(), Dimension()
        if x.rank.get_length() != 3:
            raise ValidationError(f"X must be 3-D, got {x}")
        return (x[1], x[0]) if self.layout == 0 else (x[0], x[1])

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        if self.layout not in (0, 1):
            raise ValidationError(f"layout must be 0 or 1, got {self.layout}")
        nd = len(eng.directions(self.direction))
        batch, seq = self._dims()
        hid = self.hidden_size
        y = [seq, nd, batch, hid] if self.layout == 0 else [batch, seq, nd, hid]
        state = [nd, batch, hid] if self.layout == 0 else [batch, nd, hid]
        return [(et, PartialShape(y))] + [(et, PartialShape(state))] * self.num_states

    def _activations(self, nd: int) -> list[list[eng.Activation]]:
        names = list(self.activations) or list(self.default_activations) * nd
        k = len(self.default_activations)
        if len(names) == k and nd == 2:
            names = names * 2
        if len(names) != k * nd:
            raise ValidationError(f"expected {k * nd} activations, got {names}")
        acts = eng.make_activations(names, self.activation_alpha, self.activation_beta)
        return [acts[d * k:(d + 1) * k] for d in range(nd)]

    def make_step(self, d: int, W: np.ndarray, R: np.ndarray, B: np.ndarray, P: np.ndarray | None,
                  acts: list[eng.Activation]):
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        out_dtype = x.dtype
        ct = eng.compute_dtype(out_dtype)
        get = [None if a is None else np.asarray(a) for a in inputs] + [None] * (8 - len(inputs))
        X, W, R, B, lens, h0 = get[0:6]
        c0, P = get[6], get[7]
        X = X.astype(ct)
        if self.layout == 0:
            X = X.transpose(1, 0, 2)
        batch, seq = X.shape[:2]
        hid = self.hidden_size
        dirs = eng.directions(self.direction)
        nd, ng = len(dirs), len(self.gates)
        if B is None:
            B = np.zeros((nd, 2 * ng * hid), ct)
        lens = np.full(batch, seq, np.int64) if lens is None else lens.astype(np.int64)

        def initial(s: np.ndarray | None) -> np.ndarray:
            if s is None:
                return np.zeros((nd, batch, hid), ct)
            s = s.astype(ct)
            return s.transpose(1, 0, 2) if self.layout == 1 else s

        inits = [initial(h0), initial(c0)][:self.num_states]
        acts = self._activations(nd)
        ys, finals = [], []
        for d, reverse in enumerate(dirs):
            step = self.make_step(d, W[d].astype(ct), R[d].astype(ct), B[d].astype(ct),
                                  None if P is None else P[d].astype(ct), acts[d])
            y, states = eng.run_sequence(step, X, lens, tuple(s[d] for s in inits), reverse)
            ys.append(y)
            finals.append(states)
        Y = np.stack(ys, axis=1)  # [batch, dirs, seq, hidden]
        Y = Y.transpose(2, 1, 0, 3) if self.layout == 0 else Y.transpose(0, 2, 1, 3)
        outs = [Y]
        for k in range(self.num_states):
            s = np.stack([f[k] for f in finals], axis=0)  # [dirs, batch, hidden]
            outs.append(s if self.layout == 0 else s.transpose(1, 0, 2))
        return [np.ascontiguousarray(o).astype(out_dtype, copy=False) for o in outs]


@register_op
class OnnxRNN(_OnnxRecurrent):
    """ONNX RNN: ``Ht = f(Xt W^T + Ht-1 R^T + Wb + Rb)``."""

    type_name, num_outputs = "RNN", 2
    gates, default_activations, num_states = "i", ("Tanh",), 1

    def make_step(self, d, W, R, B, P, acts):
        wb, rb = np.split(B, 2)
        return eng.RnnStep({"i": W}, {"i": R}, {"i": wb + rb}, acts, self.clip)


@register_op
class OnnxGRU(_OnnxRecurrent):
    """ONNX GRU: gates z, r, h; ``linear_before_reset`` as in the ONNX spec."""

    type_name, num_outputs = "GRU", 2
    gates, default_activations, num_states = "zrh", ("Sigmoid", "Tanh"), 1
    linear_before_reset = Attr("int", 0)

    def make_step(self, d, W, R, B, P, acts):
        wb, rb = np.split(B, 2)
        return eng.GruStep(eng.split_gates(W, "zrh"), eng.split_gates(R, "zrh"), eng.split_gates(wb, "zrh"),
                           eng.split_gates(rb, "zrh"), acts, self.clip, bool(self.linear_before_reset))


@register_op
class OnnxLSTM(_OnnxRecurrent):
    """ONNX LSTM: gates i, o, f, c; peepholes P (i, o, f); optional coupled input/forget gate."""

    type_name, num_outputs = "LSTM", 3
    gates, default_activations, num_states = "iofc", ("Sigmoid", "Tanh", "Tanh"), 2
    input_forget = Attr("int", 0)

    def make_step(self, d, W, R, B, P, acts):
        wb, rb = np.split(B, 2)
        peep = None if P is None else eng.split_gates(P, "iof")
        return eng.LstmStep(eng.split_gates(W, "iofc"), eng.split_gates(R, "iofc"),
                            eng.split_gates(wb + rb, "iofc"), acts, self.clip, peep, bool(self.input_forget))
