"""ROIAlign (opset9): pool each region of interest of ``data [N, C, H, W]`` to ``[pooled_h, pooled_w]``.

Each output bin averages (``avg``) or takes the maximum (``max``) of ``sampling_ratio``^2 bilinear
samples (``ceil(bin size)`` per axis when ``sampling_ratio`` is 0). ``aligned_mode="half_pixel"``
shifts the scaled box by -0.5 pixel; the other modes keep it and make boxes at least 1 pixel wide.
In ``max`` mode each sample contributes the largest of its four weighted neighbours (as ONNX does).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape

ALIGNED_MODES = ("asymmetric", "half_pixel_for_nn", "half_pixel")


def _sample_weights(coord: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For sample coordinates along one axis: (low index, high index, low weight, high weight, valid)."""
    valid = (coord >= -1.0) & (coord <= size)
    c = np.maximum(coord, 0.0)
    low = np.floor(c).astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    c = np.where(at_end, low.astype(np.float64), c)
    frac = c - low
    return low, high, 1.0 - frac, frac, valid


def _weighted(img: np.ndarray, yi: np.ndarray, xi: np.ndarray, wy: np.ndarray, wx: np.ndarray) -> np.ndarray:
    """``img[C, H, W]`` at sample grids ``[ph, gh]`` x ``[pw, gw]``, weighted -> ``[C, ph, gh, pw, gw]``."""
    v = img[:, yi[:, :, None, None], xi[None, None, :, :]]
    return v * (wy[:, :, None, None] * wx[None, None, :, :])


def roi_align(data: np.ndarray, rois: np.ndarray, batch_indices: np.ndarray, pooled_h: int, pooled_w: int,
              sampling_ratio: int, spatial_scale: float, mode: str, aligned_mode: str) -> np.ndarray:
    """The reference: ``[num_rois, C, pooled_h, pooled_w]``."""
    _, channels, height, width = data.shape
    out = np.zeros((rois.shape[0], channels, pooled_h, pooled_w), np.float64)
    offset = 0.5 if aligned_mode == "half_pixel" else 0.0
    # box arithmetic in the boxes' own precision: ceil(roi size / bins) is sensitive to its rounding
    ft = rois.dtype.type if rois.dtype.kind == "f" else np.float64
    for r, (box, b) in enumerate(zip(rois, batch_indices, strict=True)):
        x1, y1, x2, y2 = (float(v) for v in box.astype(ft) * ft(spatial_scale) - ft(offset))
        roi_w, roi_h = float(ft(x2) - ft(x1)), float(ft(y2) - ft(y1))
        if aligned_mode != "half_pixel":
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / pooled_h, roi_w / pooled_w
        grid_h = sampling_ratio if sampling_ratio > 0 else int(np.ceil(roi_h / pooled_h))
        grid_w = sampling_ratio if sampling_ratio > 0 else int(np.ceil(roi_w / pooled_w))
        grid_h, grid_w = max(grid_h, 1), max(grid_w, 1)
        # sample positions: [pooled, grid] per axis
        ys = y1 + (np.arange(pooled_h)[:, None] + (np.arange(grid_h)[None, :] + 0.5) / grid_h) * bin_h
        xs = x1 + (np.arange(pooled_w)[:, None] + (np.arange(grid_w)[None, :] + 0.5) / grid_w) * bin_w
        yl, yh, wyl, wyh, vy = _sample_weights(ys, height)
        xl, xh, wxl, wxh, vx = _sample_weights(xs, width)
        img = data[int(b)].astype(np.float64)  # [C, H, W]
        terms = [_weighted(img, yl, xl, wyl, wxl), _weighted(img, yl, xh, wyl, wxh),
                 _weighted(img, yh, xl, wyh, wxl), _weighted(img, yh, xh, wyh, wxh)]
        valid = (vy[:, :, None, None] & vx[None, None, :, :])
        if mode == "avg":
            samples = np.where(valid, sum(terms), 0.0)
            out[r] = samples.mean(axis=(2, 4))
        else:
            samples = np.where(valid, np.maximum.reduce(terms), 0.0)
            out[r] = samples.max(axis=(2, 4))
    return out.astype(data.dtype)


@register_op
class ROIAlign(Node):
    """``(data [N, C, H, W], rois [R, 4] as x1 y1 x2 y2, batch_indices [R])`` -> ``[R, C, pooled_h, pooled_w]``."""

    type_name, version, num_inputs = "ROIAlign", "opset9", (3, 3)
    pooled_h = Attr("int")
    pooled_w = Attr("int")
    sampling_ratio = Attr("int", 0)
    spatial_scale = Attr("float", 1.0)
    mode = Attr("str", "avg")
    aligned_mode = Attr("str", "asymmetric")

    def infer(self) -> list:
        if self.mode not in ("avg", "max"):
            raise ValidationError(f"mode must be 'avg' or 'max', got '{self.mode}'")
        if self.aligned_mode not in ALIGNED_MODES:
            raise ValidationError(f"aligned_mode must be one of {ALIGNED_MODES}, got '{self.aligned_mode}'")
        if self.pooled_h <= 0 or self.pooled_w <= 0:
            raise ValidationError(f"pooled_h and pooled_w must be positive, got {self.pooled_h}, {self.pooled_w}")
        data, rois = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if data.rank.is_static and data.rank.get_length() != 4:
            raise ValidationError(f"data must be 4-D [N, C, H, W], got {data}")
        if rois.rank.is_static and (rois.rank.get_length() != 2 or rois[1].is_static and rois[1] != 4):
            raise ValidationError(f"rois must be [num_rois, 4], got {rois}")
        num = rois[0] if rois.rank.is_static else Dimension()
        c = data[1] if data.rank.is_static else Dimension()
        return [(self.get_input_element_type(0), PartialShape([num, c, self.pooled_h, self.pooled_w]))]

    def evaluate(self, inputs: list) -> list:
        data, rois, idx = inputs
        if rois.ndim != 2 or rois.shape[1] != 4 or idx.shape != (rois.shape[0],):
            raise ValidationError(f"rois {list(rois.shape)} and batch_indices {list(idx.shape)} do not match")
        if np.any((idx < 0) | (idx >= data.shape[0])):
            raise ValidationError(f"batch_indices {idx.tolist()} out of range for batch {data.shape[0]}")
        return [roi_align(data, rois, idx, self.pooled_h, self.pooled_w, self.sampling_ratio,
                          self.spatial_scale, self.mode, self.aligned_mode)]
