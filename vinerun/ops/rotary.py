"""ONNX RotaryEmbedding (opset 23): rotary positional embeddings (RoPE), half-split or interleaved."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op


@register_op
class RotaryEmbedding(Node):
    """Inputs ``X, cos_cache, sin_cache, position_ids?``; the output has X's shape and type.

    X is ``[batch, heads, seq, head]`` or ``[batch, seq, heads*head]`` (then ``num_heads`` is needed).
    The first ``rotary_embedding_dim`` (default: all) features of each head are rotated.
    """

    type_name, version, num_inputs = "RotaryEmbedding", "onnx", (3, 4)
    interleaved = Attr("int", 0)
    num_heads = Attr("int", 0)
    rotary_embedding_dim = Attr("int", 0)

    def infer(self) -> list:
        x = self.get_input_partial_shape(0)
        if x.rank.is_static and x.rank.get_length() not in (3, 4):
            raise ValidationError(f"input must be 3-D or 4-D, got {x}")
        if x.rank.is_static and x.rank.get_length() == 3 and self.num_heads <= 0:
            raise ValidationError("a 3-D input needs the num_heads attribute")
        return [(self.get_input_element_type(0), x)]

    def evaluate(self, inputs: list) -> list:
        x, cos, sin = inputs[:3]
        pos = inputs[3] if len(inputs) > 3 else None
        ct = np.float64 if x.dtype == np.float64 else np.float32
        if x.ndim == 4:
            xs = x.transpose(0, 2, 1, 3)  # [batch, seq, heads, head]
        else:
            b, s, hidden = x.shape
            xs = x.reshape(b, s, self.num_heads, hidden // self.num_heads)
        xs = xs.astype(ct)
        dim = self.rotary_embedding_dim or xs.shape[-1]
        if pos is not None:
            cos, sin = cos[pos], sin[pos]
        if cos.shape[-1] != dim // 2 or sin.shape[-1] != dim // 2:
            raise ValidationError(f"cos/sin caches must have {dim // 2} features, got {cos.shape[-1]}")
        cos, sin = cos.astype(ct)[:, :, None, :], sin.astype(ct)[:, :, None, :]
        rot, keep = xs[..., :dim], xs[..., dim:]
        x1, x2 = (rot[..., 0::2], rot[..., 1::2]) if self.interleaved else np.split(rot, 2, axis=-1)
        real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
        rot = np.stack([real, imag], axis=-1).reshape(rot.shape) if self.interleaved else np.concatenate(
            [real, imag], axis=-1)
        out = np.concatenate([rot, keep], axis=-1)
        out = out.transpose(0, 2, 1, 3) if x.ndim == 4 else out.reshape(x.shape)
        return [np.ascontiguousarray(out).astype(x.dtype, copy=False)]
