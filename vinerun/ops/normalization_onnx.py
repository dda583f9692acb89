"""ONNX normalizations with no public OpenVINO op (version "onnx"): LayerNormalization with its
Mean/InvStdDev outputs, RMSNormalization, and BatchNormalization in training mode.

``stash_type`` (an ONNX element type code, 1 = float) is the precision of the statistics.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import normalize_axis
from vinerun.ops.normalization import channel_view, float_input_types


def stash_dtype(stash_type: int, x: np.ndarray) -> np.dtype:
    """The computation dtype: the stash type, or float64 for float64 inputs."""
    t = Type.from_onnx(stash_type).to_dtype()
    return np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(t)


class TrailingNorm(Node):
    """Base of the norms over the axes ``axis .. rank-1``."""

    axis = Attr("int", -1)
    epsilon = Attr("float", 1e-5)
    stash_type = Attr("int", 1)

    def first_axis(self, rank: int) -> int:
        return normalize_axis(self.axis, rank, self)

    def check(self) -> PartialShape:
        float_input_types(self, 1)
        if self.stash_type not in (1, 10, 11, 16):
            raise ValidationError(f"stash_type {self.stash_type} is not a floating-point ONNX type")
        data = self.get_input_partial_shape(0)
        if data.rank.is_static:
            self.first_axis(data.rank.get_length())
        return data


@register_op
class LayerNormalization(TrailingNorm):
    """``(x - mean) / sqrt(var + epsilon) * scale + bias`` over the trailing axes; also outputs the
    mean and the inverse standard deviation (shape of ``x`` with the normalized axes set to 1)."""

    type_name, version, num_inputs, num_outputs = "LayerNormalization", "onnx", (2, 3), 3

    def infer(self) -> list:
        data = self.check()
        et = self.get_input_element_type(0)
        stat_type = Type.from_onnx(self.stash_type)
        if data.rank.is_dynamic:
            stats = PartialShape.dynamic()
        else:
            axis = self.first_axis(data.rank.get_length())
            stats = PartialShape(list(data)[:axis] + [1] * (data.rank.get_length() - axis))
        return [(et, data), (stat_type, stats), (stat_type, stats)]

    def evaluate(self, inputs: list) -> list:
        x, scale = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        acc = stash_dtype(self.stash_type, x)
        axes = tuple(range(self.first_axis(x.ndim), x.ndim))
        xs = x.astype(acc)
        mean = xs.mean(axis=axes, keepdims=True)
        var = np.mean(np.square(xs - mean), axis=axes, keepdims=True)
        inv = (1.0 / np.sqrt(var + self.epsilon)).astype(acc)
        y = ((xs - mean) * inv).astype(x.dtype) * scale
        if bias is not None:
            y = y + bias
        stat = Type.from_onnx(self.stash_type).to_dtype()
        return [y.astype(x.dtype), mean.astype(stat), inv.astype(stat)]


@register_op
class RMSNormalization(TrailingNorm):
    """``x / sqrt(mean(x^2) + epsilon) * scale`` over the trailing axes."""

    type_name, version, num_inputs = "RMSNormalization", "onnx", (2, 2)

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self.check())]

    def evaluate(self, inputs: list) -> list:
        x, scale = inputs
        acc = stash_dtype(self.stash_type, x)
        axes = tuple(range(self.first_axis(x.ndim), x.ndim))
        xs = x.astype(acc)
        rms = np.sqrt(np.mean(np.square(xs), axis=axes, keepdims=True) + self.epsilon)
        return [((xs / rms).astype(x.dtype) * scale).astype(x.dtype)]


@register_op
class BatchNormalization(Node):
    """ONNX BatchNormalization in training mode: normalizes with the batch statistics and outputs the
    updated running mean and variance (``running * momentum + batch * (1 - momentum)``)."""

    type_name, version, num_inputs, num_outputs = "BatchNormalization", "onnx", (5, 5), 3
    epsilon = Attr("float", 1e-5)
    momentum = Attr("float", 0.9)

    def infer(self) -> list:
        float_input_types(self, 5)
        data = self.get_input_partial_shape(0)
        if data.rank.is_static and data.rank.get_length() < 2:
            raise ValidationError(f"data must have rank >= 2, got {data}")
        return [(self.get_input_element_type(0), data),
                (self.get_input_element_type(3), self.get_input_partial_shape(3)),
                (self.get_input_element_type(4), self.get_input_partial_shape(4))]

    def evaluate(self, inputs: list) -> list:
        x, gamma, beta, mean, var = inputs
        axes = (0,) + tuple(range(2, x.ndim))
        xd = x.astype(np.float64)
        bmean = xd.mean(axis=axes)
        bvar = xd.var(axis=axes)
        r = x.ndim
        y = (xd - channel_view(bmean, r)) / np.sqrt(channel_view(bvar, r) + self.epsilon)
        y = y * channel_view(gamma.astype(np.float64), r) + channel_view(beta.astype(np.float64), r)
        m = self.momentum
        return [y.astype(x.dtype), (mean * m + bmean * (1 - m)).astype(mean.dtype),
                (var * m + bvar * (1 - m)).astype(var.dtype)]
