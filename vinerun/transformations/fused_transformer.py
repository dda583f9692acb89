"""Transformer ops the devices' attention and LayerNorm fusion passes make (internal: never written to IR; the
CPU and the GPU each register kernels for them).

Each keeps a NumPy reference equal to the subgraph it replaced, and lists the replaced nodes for profiling
(reported OPTIMIZED_OUT).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Attr, Node, Output
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.transformations.attention_fusion import AttentionFusion, AttentionMatch
from vinerun.transformations.layer_norm_fusion import LayerNormFusion, LayerNormMatch


def _softmax(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _Fused(Node):
    """Base: the friendly names and types of the nodes a fused node replaced (all but the one it is named after)."""

    @property
    def fused_names(self) -> list[tuple[str, str]]:
        return list(self.__dict__.get("_fused", ()))

    def _remember(self, nodes: list[Node], named_after: Node) -> None:
        self.__dict__["_fused"] = tuple((n.friendly_name, n.type_name) for n in nodes if n is not named_after)


class FusedAttention(_Fused):
    """``softmax(q k^T * scale + mask) v`` with the head split of q/k/v and the head merge taken in.

    Inputs: q, k, v (``[B, H, S, D]``, or ``[B, S, H*D]`` for those named in ``split``), optional additive mask.
    Output ``[B, H, Sq, Dv]``, or ``[B, Sq, H*Dv]`` when ``merge``.

    >>> att = FusedAttention.from_match(match_attention(softmax))  # doctest: +SKIP
    >>> att.split, att.merge
    ('qkv', True)
    """

    type_name, version, num_inputs = "FusedAttention", "vinerun", (3, 4)
    scale = Attr("float", 1.0)
    split = Attr("str", "")
    heads = Attr("int", 0)
    merge = Attr("bool", False)
    #: query rows whose mask row is all -inf give zeros (the NaN guard exporters write after the softmax)
    zero_masked_rows = Attr("bool", False)

    def _head_shape(self, i: int) -> list[Dimension]:
        s = list(self.get_input_partial_shape(i))
        if "qkv"[i] not in self.split:
            return s
        if len(s) != 3 or s[2].is_dynamic or self.heads <= 0 or s[2].get_length() % self.heads:
            raise ValidationError(f"FusedAttention '{self.friendly_name}': input {i} {s} does not split into "
                                  f"{self.heads} heads")
        return [s[0], Dimension(self.heads), s[1], Dimension(s[2].get_length() // self.heads)]

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        if any(self.get_input_partial_shape(i).rank.is_dynamic for i in range(3)):
            return [(et, PartialShape.dynamic())]
        q, v = self._head_shape(0), self._head_shape(2)
        if self.merge:
            dv = v[3].get_length() * q[1].get_length() if v[3].is_static and q[1].is_static else -1
            return [(et, PartialShape([q[0], q[2], Dimension(dv) if dv >= 0 else Dimension.dynamic()]))]
        return [(et, PartialShape([q[0], q[1], q[2], v[3]]))]

    def heads_of(self, x: np.ndarray, i: int) -> np.ndarray:
        """Input ``i`` as ``[B, H, S, D]``."""
        if "qkv"[i] not in self.split:
            return x
        b, s, e = x.shape
        return x.reshape(b, s, self.heads, e // self.heads).transpose(0, 2, 1, 3)

    def evaluate(self, inputs: list) -> list:
        q, k, v = (self.heads_of(inputs[i], i) for i in range(3))
        ct = np.float64 if q.dtype == np.float64 else np.float32
        scores = (q.astype(ct) @ np.swapaxes(k.astype(ct), -1, -2)) * ct(self.scale)
        if len(inputs) > 3 and inputs[3] is not None:
            scores = scores + inputs[3].astype(ct)
        y = (_softmax(scores) @ v.astype(ct)).astype(q.dtype)
        if self.merge:
            b, h, s, d = y.shape
            y = y.transpose(0, 2, 1, 3).reshape(b, s, h * d)
        if self.zero_masked_rows:
            y = zero_rows(y, inputs[3] if len(inputs) > 3 else None, self.merge)
        return [y]

    @classmethod
    def from_match(cls, match: AttentionMatch) -> FusedAttention:
        inputs: list[Output] = list(match.inputs) + ([match.mask] if match.mask is not None else [])
        qk = next(n for n in match.nodes if n.type_name == "MatMul")
        fused = cls(inputs, name=qk.friendly_name, scale=match.scale, split=match.split, heads=match.heads,
                    merge=match.merge, zero_masked_rows=match.nan_guard)
        fused._remember(match.nodes, qk)
        return fused


def zero_rows(y: np.ndarray, mask: np.ndarray | None, merged: bool) -> np.ndarray:
    """``y`` with the attention output rows whose mask row is all -inf zeroed (in place where ``y`` is
    C-contiguous): what ``Select(IsNaN(p), 0, p)`` after the softmax makes of them (their probabilities are NaN,
    then zeros). Scores can only be -inf through the mask while q and k are finite; with non-finite q or k the
    unfused guard zeros more rows."""
    if mask is None:
        return y
    removed = np.isneginf(mask).all(axis=-1)  # [B|1, H|1, Sq|1]
    if not removed.any():
        return y
    y = np.ascontiguousarray(y)
    if merged:  # y [B, Sq, H*Dv]; the mask's head axis is 1 or H
        b, sq, e = y.shape
        hm = removed.shape[1]
        rows = np.broadcast_to(removed, (b, hm, sq)).transpose(0, 2, 1)  # [B, Sq, hm]
        y.reshape(b, sq, hm, e // hm)[rows] = 0
    else:  # y [B, H, Sq, Dv]
        y[np.broadcast_to(removed, y.shape[:3])] = 0
    return y


class FusedLayerNorm(_Fused):
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` over the last axis.

    Inputs: x, gamma ``[N]``, beta ``[N]`` (constants).

    >>> ln = FusedLayerNorm.from_match(match_layer_norm(mvn))  # doctest: +SKIP
    >>> ln.eps
    1e-05
    """

    type_name, version, num_inputs = "FusedLayerNorm", "vinerun", (3, 3)
    eps = Attr("float", 1e-5)

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x, gamma, beta = inputs
        ct = np.float64 if x.dtype == np.float64 else np.float32
        xs = x.astype(ct)
        mean = xs.mean(axis=-1, keepdims=True)
        var = np.square(xs - mean).mean(axis=-1, keepdims=True)
        y = (xs - mean) / np.sqrt(var + ct(self.eps)) * gamma.astype(ct) + beta.astype(ct)
        return [y.astype(x.dtype)]

    @classmethod
    def from_match(cls, match: LayerNormMatch) -> FusedLayerNorm:
        mvn = match.nodes[0]
        n = mvn.get_output_partial_shape(0)[-1].get_length()
        dtype = mvn.get_output_element_type(0).to_dtype()
        gamma = match.gamma if match.gamma is not None else np.ones(n, dtype)
        beta = match.beta if match.beta is not None else np.zeros(n, dtype)
        fused = cls(match.x, Constant(np.ascontiguousarray(gamma, dtype), name=f"{mvn.friendly_name}.gamma"),
                    Constant(np.ascontiguousarray(beta, dtype), name=f"{mvn.friendly_name}.beta"),
                    name=mvn.friendly_name, eps=match.eps)
        fused._remember(match.nodes, mvn)
        return fused


def attention_fusion() -> AttentionFusion:
    """The attention fusion pass (makes :class:`FusedAttention` nodes)."""
    return AttentionFusion(FusedAttention.from_match)


def layer_norm_fusion() -> LayerNormFusion:
    """The LayerNorm fusion pass (makes :class:`FusedLayerNorm` nodes)."""
    return LayerNormFusion(FusedLayerNorm.from_match)
