"""FakeQuantize limits from statistics, with NNCF's rules (``nncf/quantization/fake_quantize.py``).

Activations have 256 levels. Symmetric (PERFORMANCE): ``[-h * 128/127, h]`` when the tensor has negative
values, ``[0, h]`` otherwise, ``h`` the absolute maximum. Asymmetric (MIXED): ``[min, max]`` widened to hold
zero and moved so that zero falls exactly on a level. Weights: 255 levels, symmetric ``[-h, h]`` per output
channel.

>>> import numpy as np
>>> lo, hi = symmetric_range(np.float32(-1.0), np.float32(2.0), levels=256)
>>> round(float(lo), 4), float(hi)
(-2.0157, 2.0)
>>> lo, hi = asymmetric_range(np.float32(0.5), np.float32(2.0))
>>> float(lo), float(hi)
(0.0, 2.0)
"""

from __future__ import annotations

import numpy as np

ACTIVATION_LEVELS = 256
WEIGHT_LEVELS = 255


def fix_zero_filters_symmetric(max_values: np.ndarray, eps: float = 0.01) -> np.ndarray:
    """Channels with a (near) zero range get a small one: ``max(h, max(eps * max(h), 8e-5))``."""
    max_values = np.asarray(max_values, np.float32)
    return np.maximum(np.maximum(max_values.max() * eps, 8e-5), max_values)


def symmetric_range(min_values: np.ndarray, max_values: np.ndarray, levels: int,
                    narrow_range: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of a symmetric quantizer; ``max_values`` is the absolute maximum."""
    high = fix_zero_filters_symmetric(max_values)
    if bool(np.any(np.asarray(min_values) < 0)):
        low = -high * (1.0 if narrow_range else levels / (levels - 2))
    else:
        low = np.zeros_like(high)
    return low.astype(np.float32), high.astype(np.float32)


def asymmetric_range(min_values: np.ndarray, max_values: np.ndarray,
                     num_bits: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of an asymmetric quantizer, holding zero, with zero on a quantization level."""
    lo = np.asarray(min_values, np.float64)
    hi = np.asarray(max_values, np.float64)
    ranges = hi - lo
    correction = np.where(ranges > 8e-4, (np.maximum(1e-8 * ranges, ranges) - ranges) * 0.5, 8e-4)
    lo, hi = lo - correction, hi + correction
    lo = np.where(lo < 0.0, lo, 0.0)
    hi = np.where(hi > 0.0, hi, 0.0)
    lo, hi = tune_range(lo, hi, num_bits)
    return np.asarray(lo, np.float32), np.asarray(hi, np.float32)


def tune_range(left: np.ndarray, right: np.ndarray, num_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Move one border (never inwards) so that zero is exactly representable."""
    level_high = 2 ** num_bits - 1
    qval = np.round(-left * (level_high / (right - left)))
    with np.errstate(divide="ignore", invalid="ignore"):
        ra = np.where(qval < level_high, qval / (qval - level_high) * right, left)
        rb = np.where(qval > 0.0, (qval - level_high) / qval * left, right)
    mask = (right - ra) > (rb - left)
    return np.where(mask, ra, left), np.where(mask, right, rb)


def weight_range(weights: np.ndarray, channel_axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel symmetric limits of a weight tensor, shaped to broadcast against it (``[C_out, 1, 1, 1]``)."""
    axes = tuple(a for a in range(weights.ndim) if a not in channel_axes)
    high = np.max(np.abs(weights.astype(np.float32)), axis=axes, keepdims=True) if axes else np.abs(weights)
    high = fix_zero_filters_symmetric(high)
    return (-high).astype(np.float32), high.astype(np.float32)


def fake_quantize(x: np.ndarray, low: np.ndarray, high: np.ndarray, levels: int) -> np.ndarray:
    """FakeQuantize with equal input and output limits, in NumPy (for bias correction and tests)."""
    scale = (high - low) / (levels - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint((np.clip(x, low, high) - low) / scale) * scale + low
    return np.where(scale > 0, q, low).astype(x.dtype)
