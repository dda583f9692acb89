"""ONNX Attention (opsets 23-25): scaled dot-product attention with masks, KV cache, GQA and softcap.

Inputs ``Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?`` (absent ones ``None``);
outputs ``Y, present_key, present_value, qk_matmul_output``. 3-D inputs ``[batch, seq, heads*size]``
are split into heads with ``q_num_heads`` / ``kv_num_heads``; key/value heads are shared by
groups of ``q_num_heads / kv_num_heads`` consecutive query heads (GQA / MQA).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape

_SOFTMAX_TYPES = {1: np.float32, 10: np.float16, 11: np.float64, 16: np.float32}


def to_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """[batch, seq, heads*size] -> [batch, heads, seq, size]; 4-D inputs pass through."""
    if x.ndim == 4:
        return x
    b, s, hidden = x.shape
    return x.reshape(b, s, heads, hidden // heads).transpose(0, 2, 1, 3)


def allowed_keys(q_len: int, total: int, offsets: np.ndarray, causal: bool, left: int, right: int) -> np.ndarray:
    """Bool [batch, 1, q_len, total]: which keys each query may see (causal and window limits).

    ``offsets`` ([batch]) is the absolute position of each batch's first query.
    """
    pos = offsets[:, None, None] + np.arange(q_len)[None, :, None]  # [batch, q, 1]
    key = np.arange(total)[None, None, :]
    ok = np.ones((len(offsets), q_len, total), bool)
    if causal:
        ok &= key <= pos
    if left >= 0:
        ok &= key >= pos - left
    if right >= 0:
        ok &= key <= pos + right
    return ok[:, None]


def attention_bias(batch: int, q_len: int, total: int, past_len: int | None, nonpad: np.ndarray | None,
                   mask: np.ndarray | None, causal: bool, left: int, right: int, dtype: np.dtype) -> np.ndarray:
    """The additive bias [batch, 1, q_len, total] of ONNX Attention: 0 where a query may see a key, else -inf.

    Queries follow the ``past_len`` cached keys; without a cache, ``nonpad`` ([batch], valid keys per
    batch) places them at its end and hides the keys past it. ``mask`` adds on top (see ``mask_bias``).
    """
    if past_len is not None:
        offsets = np.full(batch, past_len)
    elif nonpad is not None:
        offsets = nonpad.astype(np.int64) - q_len
    else:
        offsets = np.zeros(batch, np.int64)
    ok = allowed_keys(q_len, total, offsets, causal, left, right)
    if nonpad is not None:
        ok = ok & (np.arange(total)[None, None, None, :] < nonpad.astype(np.int64)[:, None, None, None])
    bias = np.where(ok, 0.0, -np.inf).astype(dtype)
    if mask is not None:
        bias = bias + mask_bias(mask, total, dtype)
    return bias


def mask_bias(mask: np.ndarray, total: int, dtype: np.dtype) -> np.ndarray:
    """An attention-mask input as an additive bias, its last axis padded to ``total`` with -inf."""
    bias = np.where(mask, 0.0, -np.inf).astype(dtype) if mask.dtype == np.bool_ else mask.astype(dtype)
    short = total - bias.shape[-1]
    if short > 0:
        pad = np.full(bias.shape[:-1] + (short,), -np.inf, dtype)
        bias = np.concatenate([bias, pad], axis=-1)
    return bias


def masked_softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; rows with no finite score give zeros, not NaN."""
    top = scores.max(axis=-1, keepdims=True)
    dead = ~np.isfinite(top) & (top < 0)
    e = np.exp(scores - np.where(dead, 0, top))
    s = e.sum(axis=-1, keepdims=True)
    return np.where(dead, 0, e / np.where(dead, 1, s))


@register_op
class Attention(Node):
    """ONNX Attention; see the module docstring for inputs and outputs."""

    type_name, version, num_inputs, num_outputs = "Attention", "onnx", (3, 7), 4
    is_causal = Attr("int", 0)
    kv_num_heads = Attr("int", 0)
    q_num_heads = Attr("int", 0)
    qk_matmul_output_mode = Attr("int", 0)
    scale = Attr("float", None)
    softcap = Attr("float", 0.0)
    softmax_precision = Attr("int", 0)
    left_window_size = Attr("int", -1)
    right_window_size = Attr("int", -1)

    def _in(self, i: int) -> PartialShape | None:
        return self.get_input_partial_shape(i) if self.has_input(i) else None

    def infer(self) -> list:
        q, k, v = self._in(0), self._in(1), self._in(2)
        t1, t2 = self.get_input_element_type(0), self.get_input_element_type(2)
        dyn = PartialShape.dynamic()
        if q.rank.is_dynamic or k.rank.is_dynamic or v.rank.is_dynamic:
            return [(t1, dyn), (t1, dyn), (t2, dyn), (t1, dyn)]
        three_d = q.rank.get_length() == 3
        if three_d and (self.q_num_heads <= 0 or self.kv_num_heads <= 0):
            raise ValidationError("3-D Q/K/V need the q_num_heads and kv_num_heads attributes")
        if three_d:
            hq, hkv = Dimension(self.q_num_heads), Dimension(self.kv_num_heads)
            batch, sq, skv = q[0], q[1], k[1]
            dk = _div(k[2], self.kv_num_heads)
            dv = _div(v[2], self.kv_num_heads)
        else:
            batch, hq, sq, hkv, skv, dk, dv = q[0], q[1], q[2], k[1], k[2], k[3], v[3]
        past = self._in(4)
        total = skv + past[2] if past is not None and past.rank.is_static else (
            skv if past is None else Dimension())
        y = [batch, sq, hq * dv] if three_d else [batch, hq, sq, dv]
        return [(t1, PartialShape(y)), (t1, PartialShape([batch, hkv, total, dk])),
                (t2, PartialShape([batch, hkv, total, dv])), (t1, PartialShape([batch, hq, sq, total]))]

    def evaluate(self, inputs: list) -> list:
        inputs = list(inputs) + [None] * (7 - len(inputs))
        Q, K, V, mask, past_k, past_v, nonpad = inputs
        out_t, v_t = Q.dtype, V.dtype
        ct = np.float64 if out_t == np.float64 else np.float32
        three_d = Q.ndim == 3
        q = to_heads(Q, self.q_num_heads).astype(ct)
        k = to_heads(K, self.kv_num_heads).astype(ct)
        v = to_heads(V, self.kv_num_heads).astype(ct)
        if past_k is not None:
            k = np.concatenate([past_k.astype(ct), k], axis=2)
            v = np.concatenate([past_v.astype(ct), v], axis=2)
        present_k, present_v = k, v
        batch, hq, sq, dk = q.shape
        hkv, total = k.shape[1], k.shape[2]
        if hq % hkv:
            raise ValidationError(f"q_num_heads {hq} is not a multiple of kv_num_heads {hkv}")
        k, v = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)
        scale = self.scale if self.scale is not None else 1.0 / np.sqrt(dk)
        root = np.sqrt(ct(scale))
        qk = (q * root) @ np.swapaxes(k * root, -1, -2)
        captured = [qk]
        if self.softcap:
            qk = self.softcap * np.tanh(qk / self.softcap)
        captured.append(qk)
        qk = qk + attention_bias(batch, sq, total, None if past_k is None else past_k.shape[2], nonpad, mask,
                                 bool(self.is_causal), self.left_window_size, self.right_window_size, ct)
        captured.append(qk)
        sm_t = _SOFTMAX_TYPES.get(self.softmax_precision, ct)
        probs = masked_softmax(qk.astype(sm_t)).astype(ct)
        captured.append(probs)
        y = probs @ v
        if three_d:
            y = y.transpose(0, 2, 1, 3).reshape(batch, sq, -1)
        mode = self.qk_matmul_output_mode
        if mode not in (0, 1, 2, 3):
            raise ValidationError(f"qk_matmul_output_mode must be 0..3, got {mode}")
        return [y.astype(out_t), present_k.astype(out_t), present_v.astype(v_t), captured[mode].astype(out_t)]


def _div(d: Dimension, n: int) -> Dimension:
    return Dimension(d.get_length() // n) if d.is_static else Dimension()
