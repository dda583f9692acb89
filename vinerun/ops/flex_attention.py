"""ONNX FlexAttention (ai.onnx.preview opset 1): attention with score and probability modifier bodies."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.interpreter import run_body
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ops.attention import masked_softmax

_SOFTMAX_TYPES = {1: np.float32, 10: np.float16, 11: np.float64, 16: np.float32}


@register_op
class FlexAttention(Node):
    """Inputs ``Q, K, V`` (rank 4), then the values captured by ``score_mod``, then those of ``prob_mod``.

    ``Y = prob_mod(softmax(score_mod(scale * Q K^T))) V``; the bodies take and return one
    ``[batch, q_heads, q_len, kv_len]`` tensor in the softmax precision.
    """

    type_name, version, num_inputs = "FlexAttention", "onnx", (3, 1 << 20)
    scale = Attr("float", None)
    softmax_precision = Attr("int", 0)
    score_mod = Attr("model", None)
    prob_mod = Attr("model", None)
    score_mod_captures = Attr("int", 0)

    def infer(self) -> list:
        q, v = self.get_input_partial_shape(0), self.get_input_partial_shape(2)
        et = self.get_input_element_type(0)
        for i, name in enumerate("QKV"):
            s = self.get_input_partial_shape(i)
            if s.rank.is_static and s.rank.get_length() != 4:
                raise ValidationError(f"{name} must be rank 4, got {s}")
        if q.rank.is_dynamic or v.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        return [(et, PartialShape([q[0], q[1], q[2], v[3]]))]

    def evaluate(self, inputs: list) -> list:
        q, k, v = inputs[:3]
        captures = inputs[3:]
        score_caps, prob_caps = captures[:self.score_mod_captures], captures[self.score_mod_captures:]
        default = np.float64 if q.dtype == np.float64 else np.float32
        st = _SOFTMAX_TYPES.get(self.softmax_precision, default)
        hq, hkv = q.shape[1], k.shape[1]
        if hq % hkv:
            raise ValidationError(f"Q heads ({hq}) must be a multiple of K/V heads ({hkv})")
        k = np.repeat(k, hq // hkv, axis=1).astype(st)
        v = np.repeat(v, hq // hkv, axis=1).astype(st)
        scale = self.scale if self.scale is not None else 1.0 / np.sqrt(q.shape[-1])
        scores = (q.astype(st) @ np.swapaxes(k, -1, -2)) * st(scale)
        if self.score_mod is not None:
            scores = np.asarray(run_body(self.score_mod, [scores, *score_caps])[0]).astype(st)
        probs = masked_softmax(scores).astype(st)
        if self.prob_mod is not None:
            probs = np.asarray(run_body(self.prob_mod, [probs, *prob_caps])[0]).astype(st)
        return [(probs @ v).astype(q.dtype)]
