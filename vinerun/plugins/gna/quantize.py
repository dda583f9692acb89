"""GNA weight, bias and input scale factors and quantized tensors (``specs/gna.md`` §2).

Example:
    >>> q = quantize_affine(np.array([[0.5, -1.0]]), np.array([0.25]), s_in=2.0)
    >>> q.weights.tolist(), q.biases.tolist(), q.s_out
    ([[8192, -16384]], [8192], 32768.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vinerun.errors import ValidationError
from vinerun.plugins.gna import arith

# frontend/quantization.hpp
FEATURE_2B = 16384.0
WEIGHT_2B = 16384.0
WEIGHT_1B = 127.0
FEATURE_1B = 64.0
BIAS_4B = float(2**30)
OUTPUT_MULTIPLIER = 230
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class QuantizedAffine:
    """A quantized affine layer: int16 (or int8 + per-row multipliers) weights, int32 biases.

    ``s_w`` includes the ×230 of the i8 path; ``s_out = s_w * s_in`` is the int32 output's scale.

    Example:
        >>> quantize_affine(np.eye(2), None, s_in=1.0).weights.tolist()
        [[16384, 0], [0, 16384]]
    """

    weights: np.ndarray
    biases: np.ndarray
    multipliers: np.ndarray | None
    s_w: float
    s_in: float

    @property
    def s_out(self) -> float:
        return self.s_w * self.s_in


def input_scale(fq_range: tuple[float, float, int] | None = None, user: float | None = None) -> float:
    """The input scale factor, first that applies: FakeQuantize ``(levels-1)/(high-low)``, user, 1.0.

    ``fq_range`` is ``(in_low, in_high, levels)``; levels are capped at 65536.
    """
    if fq_range is not None:
        low, high, levels = fq_range
        if not high > low:
            raise ValidationError(f"FakeQuantize input range must have high > low, got [{low}, {high}]")
        return (min(int(levels), 65536) - 1) / (high - low)
    if user is not None:
        if not np.isfinite(user) or user == 0:
            raise ValidationError("input scale factor of 0.0f or +-inf not supported")
        return float(user)
    return 1.0


def sample_input_scale(x: np.ndarray) -> float:
    """The speech samples' choice: ``16384 / max|x|`` over the first utterance (1.0 if all zero)."""
    m = float(np.max(np.abs(x))) if np.size(x) else 0.0
    return FEATURE_2B / m if m > 0 else 1.0


def scale_for(values: np.ndarray, target: float) -> float:
    """``target / max|values|``; 1.0 for an all-zero tensor."""
    m = float(np.max(np.abs(values))) if np.size(values) else 0.0
    return target / m if m > 0 else 1.0


def const_scale(c: np.ndarray, int8: bool = False) -> float:
    """A constant's scale factor: ``32767 / max|c|`` (127 for int8)."""
    return scale_for(c, 127.0 if int8 else 32767.0)


def weight_scale(w: np.ndarray, b: np.ndarray | None, s_in: float, precision: str = "i16") -> float:
    """The weight scale s_w: ``target/max|W|`` capped by the bias rule, ×230 for i8 (int16 input).

    With a bias, ``s_b = min(s_w*s_in, 2^30/max|b|)`` and ``s_w = s_b/s_in``.
    """
    _check_precision(precision)
    s_w = scale_for(w, WEIGHT_1B if precision == "i8" else WEIGHT_2B)
    if b is not None and np.size(b) and np.max(np.abs(b)) > 0:
        s_b = min(s_w * s_in, scale_for(b, BIAS_4B))
        s_w = s_b / s_in
    if precision == "i8":
        s_w *= OUTPUT_MULTIPLIER
    return s_w


def reduce_i8_weight_scale(s_w: float, s_in: float) -> float:
    """The i8 heuristic: if ``s_out*s_in > 30*(INT32_MAX-1)`` shrink s_w by 0.5/0.45/0.40/0.35.

    The factor depends on ``r = s_out*s_in/INT32_MAX``: below 100, 150, 200, and above.
    """
    s_out = s_w * s_in
    if s_out * s_in <= 30 * (INT32_MAX - 1):
        return s_w
    r = s_out * s_in / INT32_MAX
    factor = 0.5 if r < 100 else 0.45 if r < 150 else 0.40 if r < 200 else 0.35
    return s_w * factor


def row_multipliers(w: np.ndarray, s_w: float) -> np.ndarray:
    """Per-row i8 multipliers ``m_r = (int)(max|w*s_w|/127 + 0.5)``, 0 -> 1; above 230 is an error."""
    row_max = np.max(np.abs(np.asarray(w, dtype=np.float64) * s_w), axis=1) if np.size(w) else np.zeros(0)
    m = np.trunc(row_max / WEIGHT_1B + 0.5).astype(np.int64)
    m[m == 0] = 1
    if np.any(m > OUTPUT_MULTIPLIER):
        row = int(np.argmax(m))
        raise ValidationError(f"GNA i8 weights: row {row} needs multiplier {int(m[row])}, above the maximum "
                              f"{OUTPUT_MULTIPLIER} (weight scale {s_w})")
    return m


def quantize_affine(w: np.ndarray, b: np.ndarray | None, s_in: float, precision: str = "i16",
                    s_w: float | None = None) -> QuantizedAffine:
    """Quantize an affine layer's ``[R, K]`` weights and ``[R]`` biases for input scale ``s_in``.

    ``s_w`` overrides the computed weight scale (FakeQuantize weights, a requantization).
    i16: ``w_q = sat16(round(w*s_w))``; i8: ``w_q = sat8(round(w*s_w/m_r))`` with row multipliers.
    Biases: ``b_q = sat32(round(b*s_w*s_in))``.
    """
    _check_precision(precision)
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2:
        raise ValidationError(f"GNA affine weights must be 2-D [rows, inputs], got shape {w.shape}")
    if s_w is None:
        s_w = weight_scale(w, b, s_in, precision)
        if precision == "i8":
            s_w = reduce_i8_weight_scale(s_w, s_in)
    mult = None
    if precision == "i8":
        mult = row_multipliers(w, s_w)
        wq = arith.saturate(arith.round_half_away(w * s_w / mult[:, None]), 8)
    else:
        wq = arith.quantize(w, s_w, 16)
    rows = w.shape[0]
    bq = arith.quantize(np.zeros(rows) if b is None else np.asarray(b, dtype=np.float64).reshape(rows),
                        s_w * s_in, 32)
    return QuantizedAffine(wq, bq, mult, float(s_w), float(s_in))


def fake_quantize_weight_scale(w_min: np.ndarray, w_max: np.ndarray, levels: int) -> float:
    """FakeQuantize weights: ``min over channels (levels-1)/(max-min)``, ×230 if levels <= 255."""
    span = np.asarray(w_max, dtype=np.float64) - np.asarray(w_min, dtype=np.float64)
    if np.any(span <= 0):
        raise ValidationError("FakeQuantize weight ranges must have max > min in every channel")
    s = float(np.min((levels - 1) / span))
    return s * OUTPUT_MULTIPLIER if levels <= 255 else s


def _check_precision(precision: str) -> None:
    if precision not in ("i16", "i8"):
        raise ValidationError(f"Unsupported precision of GNA hardware, should be i16 or i8, but was: {precision}")
