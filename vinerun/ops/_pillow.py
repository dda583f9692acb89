"""Interpolate's ``bilinear_pillow`` / ``bicubic_pillow`` modes: Pillow's two-pass resampling (as OpenVINO's
reference, which follows Pillow 9.4 ``Resample.c``).

Each of the two axes is resampled by a filter whose support widens by the scale when downsampling
(antialiasing), with weights normalised per output pixel: first along the last axis (width), then the
other (height). Integer data is rounded half away from zero and clipped after each pass.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError

PILLOW_MODES = ("bilinear_pillow", "bicubic_pillow")


def _bilinear(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _bicubic(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _weights(in_size: int, out_size: int, mode: str, a: float) -> np.ndarray:
    """``[out_size, in_size]`` matrix of normalised filter weights for one axis."""
    kernel, support = (_bilinear, 1.0) if mode == "bilinear_pillow" else (_bicubic, 2.0)
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support *= filterscale
    weights = np.zeros((out_size, in_size))
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        lo = max(int(center - support + 0.5), 0)  # int(): C's truncation toward zero
        hi = min(int(center + support + 0.5), in_size)
        taps = kernel((np.arange(lo, hi) - center + 0.5) / filterscale, a)
        total = taps.sum()
        weights[xx, lo:hi] = taps / total if total != 0.0 else taps
    return weights


def _pass(x: np.ndarray, weights: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Resample the last axis of ``x`` (as float64 sums), then store in ``dtype`` as Pillow does."""
    out = x.astype(np.float64) @ weights.T
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        out = np.trunc(np.where(out >= 0.0, out + 0.5, out - 0.5))
        return np.clip(out, info.min, info.max).astype(dtype)
    return out.astype(dtype)


def pillow_resample(data: np.ndarray, mode: str, axes: list[int], out_shape: list[int], cube_coeff: float
                    ) -> np.ndarray:
    """Resize the two ``axes`` (height, width) of ``data`` to ``out_shape``."""
    if len(axes) != 2:
        raise ValidationError("For Pillow based modes exactly two (HW) axes need to be provided.")
    others = [i for i in range(data.ndim) if i not in axes]
    if any(out_shape[i] != data.shape[i] for i in others):
        raise ValidationError("Pillow based modes resize only the two (HW) axes")
    h_axis, w_axis = axes
    x = np.moveaxis(data, (h_axis, w_axis), (-2, -1))
    (h_in, w_in), (h_out, w_out) = x.shape[-2:], (out_shape[h_axis], out_shape[w_axis])
    if min(h_out, w_out) <= 0 or min(h_in, w_in) <= 0:
        raise ValidationError(f"Pillow resampling needs non-empty sizes, got {(h_in, w_in)} -> {(h_out, w_out)}")
    if w_out != w_in:
        x = _pass(x, _weights(w_in, w_out, mode, cube_coeff), data.dtype)
    if h_out != h_in:
        x = np.swapaxes(_pass(np.swapaxes(x, -1, -2), _weights(h_in, h_out, mode, cube_coeff), data.dtype), -1, -2)
    return np.ascontiguousarray(np.moveaxis(x, (-2, -1), (h_axis, w_axis)))

