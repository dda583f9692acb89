"""ONNX LinearAttention (opset 27): recurrent linear attention (linear, gated, delta, gated_delta rules)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape

_RULES = ("linear", "gated", "delta", "gated_delta")


@register_op
class LinearAttention(Node):
    """Inputs ``query, key, value`` (``[B, T, heads*size]``), ``past_state? [B, H_kv, d_k, d_v]``,
    ``decay?`` (log-space, ``[B, T, H_kv*d_k]`` or ``[B, T, H_kv]``), ``beta? [B, T, H_kv or 1]``.

    Outputs ``output [B, T, H_q*d_v]`` and ``present_state [B, H_kv, d_k, d_v]``. The state is
    updated token by token; each KV head's state serves ``q_num_heads / kv_num_heads`` query heads.
    """

    type_name, version, num_inputs, num_outputs = "LinearAttention", "onnx", (3, 6), 2
    chunk_size = Attr("int", 64)
    kv_num_heads = Attr("int")
    q_num_heads = Attr("int")
    scale = Attr("float", 0.0)
    update_rule = Attr("str", "gated_delta")

    def infer(self) -> list:
        if self.update_rule not in _RULES:
            raise ValidationError(f"update_rule must be one of {_RULES}, got '{self.update_rule}'")
        hq, hkv = self.q_num_heads, self.kv_num_heads
        if hq <= 0 or hkv <= 0 or hq % hkv:
            raise ValidationError(f"q_num_heads ({hq}) must be a positive multiple of kv_num_heads ({hkv})")
        q, k, v = (self.get_input_partial_shape(i) for i in range(3))
        et = self.get_input_element_type(0)
        st = self.get_input_element_type(3) if self.has_input(3) else et
        if q.rank.is_dynamic or k.rank.is_dynamic or v.rank.is_dynamic:
            return [(et, PartialShape.dynamic()), (st, PartialShape.dynamic())]
        dk = Dimension(k[2].get_length() // hkv) if k[2].is_static else Dimension()
        dv = Dimension(v[2].get_length() // hkv) if v[2].is_static else Dimension()
        return [(et, PartialShape([q[0], q[1], dv * hq])), (st, PartialShape([q[0], hkv, dk, dv]))]

    def evaluate(self, inputs: list) -> list:
        inputs = list(inputs) + [None] * (6 - len(inputs))
        query, key, value, past, decay, beta = inputs
        rule = self.update_rule
        if rule in ("gated", "gated_delta") and decay is None:
            raise ValidationError(f"update_rule '{rule}' needs the decay input")
        if rule in ("delta", "gated_delta") and beta is None:
            raise ValidationError(f"update_rule '{rule}' needs the beta input")
        ct = np.float64 if query.dtype == np.float64 else np.float32
        hq, hkv = self.q_num_heads, self.kv_num_heads
        b, t = query.shape[:2]
        dk, dv = key.shape[2] // hkv, value.shape[2] // hkv
        q = query.reshape(b, t, hq, dk).astype(ct)
        k = key.reshape(b, t, hkv, dk).astype(ct)
        v = value.reshape(b, t, hkv, dv).astype(ct)
        state = np.zeros((b, hkv, dk, dv), ct) if past is None else past.astype(ct)
        if decay is not None:  # -> [b, t, hkv, dk or 1]
            decay = decay.reshape(b, t, hkv, -1).astype(ct)
        if beta is not None:  # -> [b, t, hkv or 1, 1]
            beta = beta.reshape(b, t, -1, 1).astype(ct)
        scale = self.scale or 1.0 / np.sqrt(query.shape[2] // hq)
        group = hq // hkv
        out = np.zeros((b, t, hq, dv), ct)
        for i in range(t):
            kt, vt = k[:, i], v[:, i]  # [b, hkv, dk], [b, hkv, dv]
            if decay is not None:
                state = np.exp(decay[:, i])[..., None] * state
            if rule in ("linear", "gated"):
                state = state + kt[..., :, None] * vt[..., None, :]
            else:
                recalled = np.einsum("bhkv,bhk->bhv", state, kt)
                state = state + beta[:, i][..., None] * kt[..., :, None] * (vt - recalled)[..., None, :]
            shared = np.repeat(state, group, axis=1)  # [b, hq, dk, dv]
            out[:, i] = scale * np.einsum("bhk,bhkv->bhv", q[:, i], shared)
        st_type = past.dtype if past is not None else query.dtype
        return [out.reshape(b, t, hq * dv).astype(query.dtype), state.astype(st_type)]
