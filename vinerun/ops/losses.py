"""ONNX training losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both take scores ``[N, C, d1, ..., dk]`` and integer targets ``[N, d1, ..., dk]``, optional class
weights ``[C]``, an optional ``ignore_index`` (targets equal to it add nothing and weigh nothing) and
``reduction`` "none" (per element), "sum", or "mean" (weighted mean over the non-ignored elements).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ops._widen import widen
from vinerun.ops.softmax import log_softmax

REDUCTIONS = ("none", "sum", "mean")


def nll_loss(log_prob: np.ndarray, target: np.ndarray, weight: np.ndarray | None,
             ignore_index: int | None, reduction: str) -> np.ndarray:
    """The weighted negative log-likelihood of ``target`` under ``log_prob`` (classes on axis 1)."""
    classes = log_prob.shape[1]
    t = target.astype(np.int64)
    ignored = t == ignore_index if ignore_index is not None else np.zeros(t.shape, bool)
    safe = np.where(ignored, 0, t)
    if np.any((safe < 0) | (safe >= classes)):
        bad = int(safe[(safe < 0) | (safe >= classes)][0])
        raise ValidationError(f"target value {bad} is out of range [0, {classes})")
    picked = np.take_along_axis(log_prob, np.expand_dims(safe, 1), axis=1).squeeze(1)
    w = np.ones_like(picked) if weight is None else weight.astype(picked.dtype)[safe]
    w = np.where(ignored, np.zeros((), w.dtype), w)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(loss) / np.sum(w)


class _Loss(Node):
    """Shared attributes and shape rules of the two losses."""

    version = "onnx"
    num_inputs = (2, 3)
    reduction = Attr("str", "mean")
    ignore_index = Attr("int", None)

    def loss_type_and_shape(self) -> tuple:
        et = self.get_input_element_type(0)
        if et.is_static() and not et.is_real():
            raise ValidationError(f"scores must be floating point, got {et.get_type_name()}")
        t_et = self.get_input_element_type(1)
        if t_et.is_static() and not t_et.is_integral_number():
            raise ValidationError(f"targets must be integers, got {t_et.get_type_name()}")
        if self.reduction not in REDUCTIONS:
            raise ValidationError(f"reduction must be one of {list(REDUCTIONS)}, got '{self.reduction}'")
        scores, target = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if scores.rank.is_static:
            if scores.rank.get_length() < 2:
                raise ValidationError(f"scores must have shape [N, C, ...], got {scores}")
            if target.rank.is_static:
                expected = PartialShape([scores[0]] + list(scores)[2:])
                if not target.compatible(expected):
                    raise ValidationError(f"target shape {target} does not match scores shape {scores}")
        if self.reduction != "none":
            return et, PartialShape([])
        if target.rank.is_static:
            return et, target
        if scores.rank.is_static:
            return et, PartialShape([scores[0]] + list(scores)[2:])
        return et, PartialShape.dynamic()

    def weight(self, inputs: list) -> np.ndarray | None:
        return inputs[2] if len(inputs) > 2 and inputs[2] is not None else None


@register_op
class NegativeLogLikelihoodLoss(_Loss):
    """``-input[n, target[n, d], d] * weight[target[n, d]]``, reduced as ``reduction`` says."""

    type_name = "NegativeLogLikelihoodLoss"

    def infer(self) -> list:
        return [self.loss_type_and_shape()]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        w = self.weight(inputs)
        loss = nll_loss(widen(x), inputs[1], None if w is None else widen(w), self.ignore_index, self.reduction)
        return [np.asarray(loss).astype(x.dtype, copy=False)]


@register_op
class SoftmaxCrossEntropyLoss(_Loss):
    """NegativeLogLikelihoodLoss of ``log_softmax(scores, axis=1)``; output 1 is that log-probability."""

    type_name = "SoftmaxCrossEntropyLoss"
    num_outputs = 2

    def infer(self) -> list:
        return [self.loss_type_and_shape(), (self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        w = self.weight(inputs)
        log_prob = log_softmax(widen(x), 1) if x.size else widen(x)
        loss = nll_loss(log_prob, inputs[1], None if w is None else widen(w), self.ignore_index, self.reduction)
        return [np.asarray(loss).astype(x.dtype, copy=False), log_prob.astype(x.dtype, copy=False)]
