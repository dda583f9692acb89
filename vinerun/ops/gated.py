"""ONNX SwiGLU (opset 28) and CausalConvWithState (opset 27): building blocks of gated sequence models."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape


def _compute_type(dtype: np.dtype) -> type:
    return np.float64 if dtype == np.float64 else np.float32


def silu(x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    return x / (1.0 + np.exp(-alpha * x))


@register_op
class SwiGLU(Node):
    """``Y = A * sigmoid(alpha * A) * B`` for same-shaped A (gate) and B (value)."""

    type_name, version, num_inputs = "SwiGLU", "onnx", (2, 2)
    alpha = Attr("float", 1.0)

    def infer(self) -> list:
        a, b = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if not a.compatible(b):
            raise ValidationError(f"A and B must have the same shape, got {a} and {b}")
        return [(self.get_input_element_type(0), a.merge(b) or a)]

    def evaluate(self, inputs: list) -> list:
        a, b = inputs
        ct = _compute_type(a.dtype)
        return [(silu(a.astype(ct), self.alpha) * b.astype(ct)).astype(a.dtype)]


@register_op
class CausalConvWithState(Node):
    """Causal depthwise 1-D convolution carrying the last ``k - 1`` positions between calls.

    Inputs ``input [B, C, L], weight [C, 1, k], bias? [C], past_state? [B, C, k-1]``;
    outputs ``output [B, C, L]`` and ``present_state [B, C, k-1]``.
    """

    type_name, version, num_inputs, num_outputs = "CausalConvWithState", "onnx", (2, 4), 2
    activation = Attr("str", "none")

    def infer(self) -> list:
        if self.activation not in ("none", "silu", "swish"):
            raise ValidationError(f"activation must be 'none', 'silu' or 'swish', got '{self.activation}'")
        x, w = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        et = self.get_input_element_type(0)
        if x.rank.is_static and x.rank.get_length() != 3:
            raise ValidationError(f"input must be 3-D [batch, channels, length], got {x}")
        k = Dimension(w[2].get_length() - 1) if w.rank.is_static and w[2].is_static else Dimension()
        state = PartialShape([x[0], x[1], k]) if x.rank.is_static else PartialShape.dynamic()
        return [(et, x), (et, state)]

    def evaluate(self, inputs: list) -> list:
        x, w = inputs[:2]
        bias = inputs[2] if len(inputs) > 2 else None
        past = inputs[3] if len(inputs) > 3 else None
        ct = _compute_type(x.dtype)
        batch, channels, length = x.shape
        k = w.shape[-1]
        if past is None:
            past = np.zeros((batch, channels, k - 1), ct)
        padded = np.concatenate([past.astype(ct), x.astype(ct)], axis=2)
        kern = w.reshape(channels, k).astype(ct)
        out = np.zeros((batch, channels, length), ct)
        for j in range(k):
            out += kern[None, :, j, None] * padded[:, :, j:j + length]
        if bias is not None:
            out += bias.astype(ct)[None, :, None]
        if self.activation in ("silu", "swish"):
            out = silu(out)
        present = padded[:, :, padded.shape[2] - (k - 1):]
        return [out.astype(x.dtype), np.ascontiguousarray(present).astype(x.dtype)]
