"""Separable 1-D resampling used by Interpolate / Resize references.

Every resized axis gets, per output index, a few input taps and their weights from the coordinate
transform and the interpolation kernel (nearest, linear, cubic, optionally anti-aliased); the N-D
result applies the axes one after another. Points that fall outside the crop region in
``tf_crop_and_resize`` mode are reported in a mask so they can take the extrapolation value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vinerun.errors import UnsupportedOpError

COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_half_pixel_for_nn", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


@dataclass(frozen=True)
class ResampleConfig:
    """How one axis is resampled (the attributes shared by Interpolate and ONNX Resize)."""

    mode: str = "nearest"  # nearest | linear | cubic
    coordinate_mode: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_coeff: float = -0.75
    antialias: bool = False
    exclude_outside: bool = False
    #: ONNX takes the resized length as ``in_len * scale`` (possibly fractional) in align_corners and
    #: half_pixel_symmetric; Interpolate takes the integer output length
    fractional_length: bool = False
    #: precision of the coordinate arithmetic (OpenVINO computes it in float32)
    single_precision: bool = False


def source_coords(cfg: ResampleConfig, in_len: int, out_len: int, scale: float,
                  roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Input coordinates of every output index along one axis (float64 array)."""
    ft = np.float32 if cfg.single_precision else np.float64
    return _source_coords(cfg, in_len, out_len, ft(scale), roi, ft).astype(np.float64)


def _source_coords(cfg: ResampleConfig, in_len: int, out_len: int, scale: np.floating,
                   roi: tuple[float, float], ft: type) -> np.ndarray:
    x = np.arange(out_len, dtype=ft)
    length = ft(in_len) * scale if cfg.fractional_length else ft(out_len)
    m = cfg.coordinate_mode
    if m == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if m == "half_pixel_symmetric":
        adjustment = out_len / length
        offset = in_len / 2.0 * (1.0 - adjustment)
        return offset + (x + 0.5) / scale - 0.5
    if m == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(x)
    if m == "align_corners":
        return x * (in_len - 1) / (length - 1) if length > 1 else np.zeros_like(x)
    if m == "asymmetric":
        return x / scale
    if m == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    if m == "tf_crop_and_resize":
        start, end = roi
        if out_len > 1:
            return start * (in_len - 1) + x * (end - start) * (in_len - 1) / (out_len - 1)
        return np.full_like(x, 0.5 * (start + end) * (in_len - 1))
    raise UnsupportedOpError(f"coordinate transformation mode '{m}' is not supported")


def _nearest_index(x: np.ndarray, mode: str, downsample: bool) -> np.ndarray:
    frac = x - np.floor(x)
    if mode == "round_prefer_floor":
        return np.where(frac <= 0.5, np.floor(x), np.ceil(x))
    if mode == "round_prefer_ceil":
        return np.where(frac < 0.5, np.floor(x), np.ceil(x))
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    if mode == "simple":
        return np.ceil(x) if downsample else np.floor(x)
    raise UnsupportedOpError(f"nearest mode '{mode}' is not supported")


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


def _taps(cfg: ResampleConfig, x: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Integer tap positions ``[out, taps]`` (unclamped) and their weights for linear/cubic."""
    base = np.floor(x)
    ratio = x - base
    # a point exactly on a sample is taken as ratio 1 from the left neighbour (as the ONNX spec does)
    on_grid = ratio == 0
    base = np.where(on_grid, base - 1, base)
    ratio = np.where(on_grid, 1.0, ratio)
    # anti-aliasing stretches the kernel by 1/scale when downsampling (taps start..1-start)
    s = min(scale, 1.0) if cfg.antialias else 1.0
    support = 1.0 if cfg.mode == "linear" else 2.0
    start = int(np.floor(-support / s) + 1)
    offsets = np.arange(start, 2 - start, dtype=np.float64)
    dist = (offsets[None, :] - ratio[:, None]) * s
    if cfg.mode == "linear":
        w = np.clip(1.0 - np.abs(dist), 0.0, 1.0)
    elif cfg.mode == "cubic":
        w = _cubic(dist, cfg.cubic_coeff)
    else:
        raise UnsupportedOpError(f"interpolation mode '{cfg.mode}' is not supported")
    if cfg.antialias:
        w = w / w.sum(axis=1, keepdims=True)
    return base[:, None] + offsets[None, :], w


def axis_taps(cfg: ResampleConfig, in_len: int, out_len: int, scale: float,
              roi: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(index[out, taps], weight[out, taps], outside[out])`` along one axis.

    Indices are clamped into the input (edge padding); ``outside`` marks outputs that take the
    extrapolation value (``tf_crop_and_resize`` only).
    """
    x = source_coords(cfg, in_len, out_len, scale, roi)
    outside = np.zeros(out_len, bool)
    if cfg.coordinate_mode == "tf_crop_and_resize":
        outside = (x < 0) | (x > in_len - 1)
    if cfg.mode == "nearest":
        idx = np.clip(_nearest_index(x, cfg.nearest_mode, scale < 1), 0, in_len - 1).astype(np.int64)
        return idx[:, None], np.ones((out_len, 1)), outside
    pos, w = _taps(cfg, x, scale)
    if cfg.exclude_outside:
        w = np.where((pos < 0) | (pos > in_len - 1), 0.0, w)
        total = w.sum(axis=1, keepdims=True)
        w = np.divide(w, total, out=np.zeros_like(w), where=total != 0)
    return np.clip(pos, 0, in_len - 1).astype(np.int64), w, outside


# coordinate transforms that map every index onto itself at scale 1
_IDENTITY_AT_SCALE_1 = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"}


def resample(data: np.ndarray, cfg: ResampleConfig, out_shape: list[int], scales: list[float],
             rois: list[tuple[float, float]] | None = None, extrapolation_value: float = 0.0) -> np.ndarray:
    """Resample ``data`` to ``out_shape``; ``scales[i]`` is the scale the coordinate transform uses."""
    acc = data.astype(np.float64)
    mask = None
    for axis, (in_len, out_len) in enumerate(zip(data.shape, out_shape, strict=True)):
        if in_len == out_len and scales[axis] == 1.0 and cfg.coordinate_mode in _IDENTITY_AT_SCALE_1:
            continue
        roi = rois[axis] if rois is not None else (0.0, 1.0)
        idx, w, outside = axis_taps(cfg, in_len, out_len, scales[axis], roi)
        shape = [1] * data.ndim
        shape[axis] = out_len
        total = 0.0
        for k in range(idx.shape[1]):
            wk = w[:, k].reshape(shape)
            # a zero weight must not turn an inf or NaN it never reads into NaN
            total = total + np.where(wk == 0, 0.0, wk * np.take(acc, idx[:, k], axis=axis))
        acc = np.asarray(total)
        if outside.any():
            m = outside.reshape(shape)
            mask = m if mask is None else (mask | m)
    if mask is not None:
        acc = np.where(mask, extrapolation_value, acc)
    return cast_like(acc, data.dtype)


def cast_like(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Cast float results back to ``dtype``; integers are rounded half to even and saturated."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(values), info.min, info.max).astype(dtype)
    return np.asarray(values).astype(dtype)
