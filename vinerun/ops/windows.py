"""ONNX signal windows and the mel filter bank (version "onnx").

``HannWindow``, ``HammingWindow`` and ``BlackmanWindow`` take a scalar ``size`` and return a 1-D
generalized cosine window ``sum_k (-1)^k a_k cos(2 pi k n / N)`` with ``N = size`` (``periodic``)
or ``size - 1`` (symmetric). ``MelWeightMatrix`` builds triangular mel-scale filters.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


def cosine_window(size: int, coefficients: tuple[float, ...], periodic: bool) -> np.ndarray:
    if size < 0:
        raise ValidationError(f"window size must not be negative, got {size}")
    n = np.arange(size, dtype=np.float64)
    denom = size if periodic else size - 1
    if denom <= 0:
        return np.ones(size)
    phase = 2.0 * np.pi * n / denom
    return sum(((-1) ** k) * a * np.cos(k * phase) for k, a in enumerate(coefficients))


def _scalar(x: np.ndarray) -> float:
    return np.asarray(x).reshape(-1)[0].item()


class _Window(Node):
    """``size`` (scalar integer) -> ``[size]`` of ``output_type``."""

    num_inputs = (1, 1)
    periodic = Attr("bool", True)
    output_type = Attr("type", Type.f32)
    coefficients: tuple[float, ...] = ()

    def infer(self) -> list:
        size = self.const_input(0)
        return [(self.output_type, PartialShape([Dimension() if size is None else int(_scalar(size))]))]

    def evaluate(self, inputs: list) -> list:
        w = cosine_window(int(_scalar(inputs[0])), self.coefficients, self.periodic)
        return [np.asarray(w).astype(self.output_type.to_dtype())]


@register_op
class HannWindow(_Window):
    """0.5 - 0.5 cos(2 pi n / N)."""

    type_name, version = "HannWindow", "onnx"
    coefficients = (0.5, 0.5)


@register_op
class HammingWindow(_Window):
    """25/46 - 21/46 cos(2 pi n / N)."""

    type_name, version = "HammingWindow", "onnx"
    coefficients = (25.0 / 46.0, 21.0 / 46.0)


@register_op
class BlackmanWindow(_Window):
    """0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""

    type_name, version = "BlackmanWindow", "onnx"
    coefficients = (0.42, 0.5, 0.08)


def hz_to_mel(hz: float) -> float:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (np.power(10.0, mel / 2595.0) - 1.0)


def mel_weight_matrix(num_mel_bins: int, dft_length: int, sample_rate: int, lower_hz: float,
                      upper_hz: float) -> np.ndarray:
    """``[dft_length // 2 + 1, num_mel_bins]`` triangular filters with edges on DFT bins."""
    if num_mel_bins <= 0 or dft_length <= 0 or sample_rate <= 0 or not 0 <= lower_hz < upper_hz:
        raise ValidationError(f"invalid mel filter bank: {num_mel_bins} bins, dft_length {dft_length}, "
                              f"sample_rate {sample_rate}, edges {lower_hz}..{upper_hz} Hz")
    low, high = hz_to_mel(lower_hz), hz_to_mel(upper_hz)
    # num_mel_bins + 2 points spaced (high - low) / (num_mel_bins + 2) apart, as ONNX defines them
    mels = low + np.arange(num_mel_bins + 2) * (high - low) / (num_mel_bins + 2)
    edges = np.floor((dft_length + 1) * mel_to_hz(mels) / sample_rate).astype(np.int64)
    out = np.zeros((dft_length // 2 + 1, num_mel_bins))
    for i in range(num_mel_bins):
        left, centre, right = edges[i], edges[i + 1], edges[i + 2]
        if centre == left:
            out[centre, i] = 1.0
        else:
            j = np.arange(left, centre + 1)
            out[j, i] = (j - left) / (centre - left)
        if right > centre:
            j = np.arange(centre, right)
            out[j, i] = (right - j) / (right - centre)
    return out


@register_op
class MelWeightMatrix(Node):
    """``(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)`` -> mel filters."""

    type_name, version, num_inputs = "MelWeightMatrix", "onnx", (5, 5)
    output_type = Attr("type", Type.f32)

    def infer(self) -> list:
        bins, length = self.const_input(0), self.const_input(1)
        rows = Dimension() if length is None else Dimension(int(_scalar(length)) // 2 + 1)
        cols = Dimension() if bins is None else Dimension(int(_scalar(bins)))
        return [(self.output_type, PartialShape([rows, cols]))]

    def evaluate(self, inputs: list) -> list:
        bins, length, rate, low, high = (_scalar(x) for x in inputs)
        m = mel_weight_matrix(int(bins), int(length), int(rate), float(low), float(high))
        return [m.astype(self.output_type.to_dtype())]
