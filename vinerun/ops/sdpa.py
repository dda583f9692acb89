"""OpenVINO ScaledDotProductAttention (opset13).

Inputs ``query [N, ..., L, E], key [N, ..., S, E], value [N, ..., S, Ev]``, optional
``attention_mask`` (bool: True attends; float: added to the scores; broadcast to ``[N, ..., L, S]``)
and ``scale`` (a scalar; default ``1/sqrt(E)``). With ``causal`` the mask input is ignored and
query ``i`` sees keys ``j <= i``. Output ``[N, ..., L, Ev]``.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ops.attention import masked_softmax


@register_op
class ScaledDotProductAttention(Node):
    """``softmax(Q K^T * scale + mask) V``; see the module docstring."""

    type_name, version, num_inputs = "ScaledDotProductAttention", "opset13", (3, 5)
    causal = Attr("bool", False)

    def infer(self) -> list:
        q, k, v = (self.get_input_partial_shape(i) for i in range(3))
        et = self.get_input_element_type(0)
        if q.rank.is_dynamic or k.rank.is_dynamic or v.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        for name, s in (("query", q), ("key", k), ("value", v)):
            if s.rank.get_length() < 3:
                raise ValidationError(f"{name} must have rank >= 3, got {s}")
        batch = broadcast_shapes(PartialShape(list(q)[:-2]), PartialShape(list(k)[:-2]), "query/key batch")
        return [(et, PartialShape(list(batch) + [q[-2], v[-1]]))]

    def evaluate(self, inputs: list) -> list:
        q, k, v = inputs[:3]
        mask = inputs[3] if len(inputs) > 3 else None
        scale = inputs[4] if len(inputs) > 4 else None
        ct = np.float64 if q.dtype == np.float64 else np.float32
        s = ct(1.0 / np.sqrt(q.shape[-1])) if scale is None else np.asarray(scale).astype(ct).reshape(())
        scores = (q.astype(ct) @ np.swapaxes(k.astype(ct), -1, -2)) * s
        L, S = scores.shape[-2:]
        if self.causal:
            scores = np.where(np.tril(np.ones((L, S), bool)), scores, -np.inf)
        elif mask is not None:
            scores = scores + (np.where(mask, 0.0, -np.inf).astype(ct) if mask.dtype == np.bool_ else mask.astype(ct))
        return [(masked_softmax(scores) @ v.astype(ct)).astype(q.dtype)]
