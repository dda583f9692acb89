"""Normalization ops: BatchNormInference (opset5), MVN (opset6), GroupNormalization (opset12),
LRN (opset1) and NormalizeL2 (opset1).

References compute in float64 (float32 for narrower floats would lose accuracy on long reductions)
and return the input's element type.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._base import normalize_axis


def channel_view(v: np.ndarray, rank: int) -> np.ndarray:
    """A per-channel vector ``[C]`` shaped ``[1, C, 1, ...]`` to broadcast over ``[N, C, *S]``."""
    return v.reshape((1, -1) + (1,) * (rank - 2))


def float_input_types(node: Node, count: int) -> None:
    for i in range(count):
        et = node.get_input_element_type(i)
        if et.is_static() and not et.is_real():
            raise ValidationError(f"input {i} must be a floating-point tensor, got {et.get_type_name()}")


def axes_value(node: Node, i: int, rank: int, values: np.ndarray | None = None) -> list[int] | None:
    """Normalized axes from input ``i`` (its runtime ``values`` or its constant); None when unknown."""
    raw = values if values is not None else node.const_input(i)
    if raw is None:
        return None
    return sorted({normalize_axis(int(a), rank, node) for a in np.asarray(raw).reshape(-1)})



def like_data_with_axes(node: Node) -> list:
    """One output like the data (input 0), once the constant axes (input 1) are checked against its rank."""
    data = node.get_input_partial_shape(0)
    if data.rank.is_static:
        axes_value(node, 1, data.rank.get_length())
    return [(node.get_input_element_type(0), data)]

@register_op
class BatchNormInference(Node):
    """``gamma * (x - mean) / sqrt(variance + epsilon) + beta`` per channel (axis 1)."""

    type_name, version, num_inputs = "BatchNormInference", "opset5", (5, 5)
    epsilon = Attr("float")

    def infer(self) -> list:
        float_input_types(self, 5)
        if self.epsilon < 0:
            raise ValidationError(f"epsilon must be non-negative, got {self.epsilon}")
        data = self.get_input_partial_shape(0)
        if data.rank.is_static and data.rank.get_length() < 2:
            raise ValidationError(f"data must have rank >= 2, got {data}")
        return [(self.get_input_element_type(0), data)]

    def evaluate(self, inputs: list) -> list:
        x, gamma, beta, mean, var = (np.asarray(v, dtype=np.float64) for v in inputs)
        r = x.ndim
        inv = 1.0 / np.sqrt(channel_view(var, r) + self.epsilon)
        out = (x - channel_view(mean, r)) * inv * channel_view(gamma, r) + channel_view(beta, r)
        return [out.astype(inputs[0].dtype)]


def mean_variance(x: np.ndarray, axes: tuple[int, ...], normalize_variance: bool, eps: float,
                  inside_sqrt: bool) -> np.ndarray:
    """Subtract the mean over ``axes``; divide by the standard deviation when ``normalize_variance``."""
    xd = x.astype(np.float64)
    centered = xd - xd.mean(axis=axes, keepdims=True)
    if normalize_variance:
        var = np.mean(centered * centered, axis=axes, keepdims=True)
        centered = centered / (np.sqrt(var + eps) if inside_sqrt else np.sqrt(var) + eps)
    return centered.astype(x.dtype)


@register_op
class MVN(Node):
    """Mean-variance normalization over the axes given by input 1."""

    type_name, version, num_inputs = "MVN", "opset6", (2, 2)
    normalize_variance = Attr("bool", True)
    eps = Attr("float", 1e-9)
    eps_mode = Attr("str", "inside_sqrt")

    def infer(self) -> list:
        if self.eps_mode not in ("inside_sqrt", "outside_sqrt"):
            raise ValidationError(f"eps_mode must be inside_sqrt or outside_sqrt, got '{self.eps_mode}'")
        if not self.get_input_element_type(1).is_dynamic() and not self.get_input_element_type(1).is_integral():
            raise ValidationError("axes (input 1) must be an integer tensor")
        return like_data_with_axes(self)

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axes = tuple(axes_value(self, 1, x.ndim, inputs[1]) or ())
        return [mean_variance(x, axes, self.normalize_variance, self.eps, self.eps_mode == "inside_sqrt")]


@register_op
class GroupNormalization(Node):
    """Normalize each of ``num_groups`` channel groups, then scale and shift per channel."""

    type_name, version, num_inputs = "GroupNormalization", "opset12", (3, 3)
    num_groups = Attr("int")
    epsilon = Attr("float")

    def infer(self) -> list:
        float_input_types(self, 3)
        data = self.get_input_partial_shape(0)
        if self.num_groups < 1:
            raise ValidationError(f"num_groups must be positive, got {self.num_groups}")
        if data.rank.is_static:
            if data.rank.get_length() < 2:
                raise ValidationError(f"data must have rank >= 2, got {data}")
            c = data[1]
            if c.is_static and c.get_length() % self.num_groups:
                raise ValidationError(f"{c} channels do not split into {self.num_groups} groups")
        return [(self.get_input_element_type(0), data)]

    def evaluate(self, inputs: list) -> list:
        x, scale, bias = inputs
        n, c = x.shape[:2]
        grouped = x.reshape(n, self.num_groups, -1)
        norm = mean_variance(grouped.astype(np.float64), (2,), True, self.epsilon, True).reshape(x.shape)
        out = norm * channel_view(scale.astype(np.float64), x.ndim) + channel_view(bias.astype(np.float64), x.ndim)
        return [out.astype(x.dtype)]


@register_op
class LRN(Node):
    """Local response normalization: ``x / (bias + alpha / size^len(axes) * sum(x^2 over the window))^beta``.

    The window along each axis spans ``(size - 1) // 2`` elements on each side (so an even ``size``
    sums ``size - 1`` elements, as OpenVINO does).
    """

    type_name, version, num_inputs = "LRN", "opset1", (2, 2)
    alpha = Attr("float", 1e-4)
    beta = Attr("float", 0.75)
    bias = Attr("float", 1.0)
    size = Attr("int")

    def infer(self) -> list:
        if self.size < 1:
            raise ValidationError(f"size must be positive, got {self.size}")
        return like_data_with_axes(self)

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axes = axes_value(self, 1, x.ndim, inputs[1]) or []
        sq = np.square(x.astype(np.float64))
        half = (self.size - 1) // 2
        width = 2 * half + 1
        for ax in axes:
            widths = [(0, 0)] * x.ndim
            widths[ax] = (half, half)
            padded = np.pad(sq, widths)
            csum = np.concatenate([np.zeros_like(np.take(padded, [0], axis=ax)), np.cumsum(padded, axis=ax)], axis=ax)
            n = x.shape[ax]
            sq = np.take(csum, np.arange(width, width + n), axis=ax) - np.take(csum, np.arange(n), axis=ax)
        scale = self.bias + self.alpha / self.size ** len(axes) * sq
        return [(x / np.power(scale, self.beta)).astype(x.dtype)]


@register_op
class NormalizeL2(Node):
    """``x / sqrt(sum(x^2 over axes) (+|max) eps)``."""

    type_name, version, num_inputs = "NormalizeL2", "opset1", (2, 2)
    eps = Attr("float")
    eps_mode = Attr("str", "add")

    def infer(self) -> list:
        if self.eps_mode not in ("add", "max"):
            raise ValidationError(f"eps_mode must be 'add' or 'max', got '{self.eps_mode}'")
        return like_data_with_axes(self)

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axes = tuple(axes_value(self, 1, x.ndim, inputs[1]) or ())
        xd = x.astype(np.float64)
        ss = np.sum(xd * xd, axis=axes, keepdims=True)
        ss = ss + self.eps if self.eps_mode == "add" else np.maximum(ss, self.eps)
        with np.errstate(divide="ignore", invalid="ignore"):
            return [(xd / np.sqrt(ss)).astype(x.dtype)]
