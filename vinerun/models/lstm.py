"""An LSTM sequence model: one forward ``LSTMSequence`` over [batch, time, features] and a linear
head on every step's hidden state.

``lstm_model()`` builds it with the opset API (OpenVINO gate order f, i, c, o); ``lstm_onnx()``
the same network as ONNX's ``LSTM`` (gate order i, o, f, c).
"""

from __future__ import annotations

import numpy as np
import onnx

from vinerun import opset13 as ops
from vinerun.ir.model import Model
from vinerun.models._common import OnnxGraph, rng, small

_OV_TO_ONNX = ("i", "o", "f", "c")


def lstm_weights(features: int = 8, hidden: int = 16, outputs: int = 4, seed: int = 0) -> dict[str, np.ndarray]:
    """W [1, 4H, I], R [1, 4H, H], B [1, 4H] in OpenVINO's f, i, c, o order; head [H, outputs]."""
    r = rng(seed)
    s = 1 / np.sqrt(hidden)
    return {"W": small(r, (1, 4 * hidden, features), s), "R": small(r, (1, 4 * hidden, hidden), s),
            "B": small(r, (1, 4 * hidden), s), "head_w": small(r, (hidden, outputs), s),
            "head_b": small(r, (outputs,), 0.05)}


def lstm_model(batch: int = 2, steps: int = 10, features: int = 8, hidden: int = 16, outputs: int = 4,
               seed: int = 0) -> Model:
    """``sequence`` [batch, steps, features] -> ``outputs`` [batch, steps, outputs] and ``hidden`` [batch, H]."""
    w = lstm_weights(features, hidden, outputs, seed)
    x = ops.parameter([batch, steps, features], name="sequence")
    zeros = ops.constant(np.zeros((batch, 1, hidden), np.float32), name="zero_state")
    lengths = ops.constant(np.full(batch, steps, np.int32), name="lengths")
    seq = ops.lstm_sequence(x, zeros, zeros, lengths, ops.constant(w["W"], name="W"), ops.constant(w["R"], name="R"),
                            ops.constant(w["B"], name="B"), hidden, "forward", name="lstm")
    y = ops.squeeze(seq.output(0), ops.constant(np.array([1], np.int64)), name="squeeze_y")
    out = ops.add(ops.matmul(y, ops.constant(w["head_w"], name="head.weight"), False, False),
                  ops.constant(w["head_b"], name="head.bias"), name="head")
    out.output(0).set_names({"outputs"})
    h = ops.squeeze(seq.output(1), ops.constant(np.array([1], np.int64)), name="hidden")
    h.output(0).set_names({"hidden"})
    return Model([out, h], [x], "lstm")


def _to_onnx_gates(a: np.ndarray, hidden: int) -> np.ndarray:
    parts = dict(zip("fico", np.split(a, 4, axis=1), strict=True))
    return np.concatenate([parts[g] for g in _OV_TO_ONNX], axis=1)


def lstm_onnx(batch: int = 2, steps: int = 10, features: int = 8, hidden: int = 16, outputs: int = 4,
              seed: int = 0) -> onnx.ModelProto:
    """The same network as ONNX (opset 17)."""
    w = lstm_weights(features, hidden, outputs, seed)
    g = OnnxGraph()
    bias = np.concatenate([_to_onnx_gates(w["B"], hidden), np.zeros_like(w["B"])], axis=1)
    x = g.op("Transpose", "sequence", perm=[1, 0, 2])  # time-major (onnxruntime lacks layout=1)
    y, h, _ = g.op("LSTM", x, g.const(_to_onnx_gates(w["W"], hidden), "W"),
                   g.const(_to_onnx_gates(w["R"], hidden), "R"), g.const(bias, "B"), outputs=3,
                   hidden_size=hidden)
    y = g.op("Squeeze", y, g.const(np.array([1], np.int64), "axes"))  # [T, 1, B, H] -> [T, B, H]
    y = g.op("Transpose", y, perm=[1, 0, 2])
    out = g.op("Add", g.op("MatMul", y, g.const(w["head_w"], "head_w")), g.const(w["head_b"], "head_b"))
    h = g.op("Squeeze", h, g.const(np.array([0], np.int64), "axes"))  # [1, B, H]
    return g.model("lstm", [("sequence", [batch, steps, features])], [("outputs", out, [batch, steps, outputs]),
                                                                    ("hidden", h, [batch, hidden])])


def lstm_inputs(batch: int = 2, steps: int = 10, features: int = 8, seed: int = 1) -> dict[str, np.ndarray]:
    return {"sequence": rng(seed).standard_normal((batch, steps, features)).astype(np.float32)}
