"""GridSample (opset9): sample ``data [N, C, *S]`` at the normalized points of ``grid [N, *O, r]``.

``grid[..., 0]`` addresses the last (width) axis, ``grid[..., 1]`` the one before, and so on; values
run from -1 to 1 (pixel centres at the ends with ``align_corners``, pixel edges without).
Modes: ``bilinear`` (N-linear), ``nearest`` (round half to even), ``bicubic`` (A = -0.75).
Padding: ``zeros``, ``border`` (clamp) or ``reflection`` (mirror at the borders, repeatedly).
OpenVINO defines the 4-D case; the reference here handles any number of spatial axes.
"""

from __future__ import annotations

import itertools

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape

MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_A = -0.75


def denormalize(g: np.ndarray, size: int, align_corners: bool) -> np.ndarray:
    if align_corners:
        return (g + 1) / 2 * (size - 1)
    return ((g + 1) * size - 1) / 2


def reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Mirror ``x`` at ``lo`` and ``hi`` until it lies between them."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    d = np.where(below, lo - x, np.where(above, x - hi, 0.0))
    n = np.floor(d / span)
    r = d - n * span
    even = n % 2 == 0
    from_lo = np.where(even, lo + r, hi - r)
    from_hi = np.where(even, hi - r, lo + r)
    return np.where(below, from_lo, np.where(above, from_hi, x))


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Weights of the taps at offsets -1, 0, 1, 2 for a fraction ``t`` in [0, 1)."""
    a = _CUBIC_A

    def near(d: np.ndarray) -> np.ndarray:
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d: np.ndarray) -> np.ndarray:
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(data: np.ndarray, grid: np.ndarray, mode: str, padding_mode: str, align_corners: bool) -> np.ndarray:
    """The reference: ``[N, C, *S]`` sampled at ``grid [N, *O, r]`` -> ``[N, C, *O]``."""
    spatial = data.shape[2:]
    r = len(spatial)
    g = grid.astype(np.float64)
    lows = [0.0 if align_corners else -0.5 for _ in spatial]
    highs = [s - 1.0 if align_corners else s - 0.5 for s in spatial]
    coords = []
    for axis, size in enumerate(spatial):
        x = denormalize(g[..., r - 1 - axis], size, align_corners)
        if mode == "nearest":
            x = np.rint(x)
        outside = (x < lows[axis]) | (x > highs[axis])
        if padding_mode == "border":
            x = np.where(outside, np.clip(x, 0, size - 1), x)
        elif padding_mode == "reflection":
            x = np.where(outside, reflect(x, lows[axis], highs[axis]), x)
        coords.append(x)
    channels_last = np.moveaxis(data, 1, -1).astype(np.float64)  # [N, *S, C]
    batch = np.arange(data.shape[0]).reshape([-1] + [1] * (grid.ndim - 2))

    def fetch(idx: list[np.ndarray]) -> np.ndarray:
        valid = np.ones(idx[0].shape, bool)
        fixed = []
        for axis, (i, size) in enumerate(zip(idx, spatial, strict=True)):
            if padding_mode == "zeros":
                valid &= (i >= 0) & (i <= size - 1)
            elif padding_mode == "reflection":
                i = reflect(i.astype(np.float64), lows[axis], highs[axis])
            fixed.append(np.clip(i, 0, size - 1).astype(np.int64))
        values = channels_last[(batch, *fixed)]
        return np.where(valid[..., None], values, 0.0)

    if mode == "nearest":
        out = fetch([c.astype(np.int64) for c in coords])
    else:
        base = [np.floor(c) for c in coords]
        frac = [c - b for c, b in zip(coords, base, strict=True)]
        if mode == "bilinear":
            offsets, weights = [0, 1], [[1 - f, f] for f in frac]
        elif mode == "bicubic":
            offsets, weights = [-1, 0, 1, 2], [_cubic_weights(f) for f in frac]
        else:
            raise ValidationError(f"GridSample mode must be one of {MODES}, got '{mode}'")
        out = 0.0
        for taps in itertools.product(range(len(offsets)), repeat=r):
            w = np.prod([weights[a][k] for a, k in enumerate(taps)], axis=0)
            idx = [(base[a] + offsets[k]).astype(np.int64) for a, k in enumerate(taps)]
            out = out + w[..., None] * fetch(idx)
    return np.moveaxis(np.asarray(out), -1, 1).astype(data.dtype)


@register_op
class GridSample(Node):
    """``(data [N, C, *S], grid [N, *O, len(S)])`` -> ``[N, C, *O]``."""

    type_name, version, num_inputs = "GridSample", "opset9", (2, 2)
    align_corners = Attr("bool", False)
    mode = Attr("str", "bilinear")
    padding_mode = Attr("str", "zeros")

    def infer(self) -> list:
        if self.mode not in MODES:
            raise ValidationError(f"mode must be one of {MODES}, got '{self.mode}'")
        if self.padding_mode not in PADDING_MODES:
            raise ValidationError(f"padding_mode must be one of {PADDING_MODES}, got '{self.padding_mode}'")
        et = self.get_input_element_type(0)
        data, grid = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        if data.rank.is_dynamic and grid.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        if grid.rank.is_dynamic:
            return [(et, PartialShape([data[0], data[1]] + [Dimension()] * (data.rank.get_length() - 2)))]
        g = list(grid)
        if data.rank.is_static and data.rank.get_length() != len(g):
            raise ValidationError(f"data {data} and grid {grid} must have the same rank")
        if g[-1].is_static and g[-1].get_length() != len(g) - 2:
            raise ValidationError(f"grid {grid} must end in {len(g) - 2} coordinates")
        n = g[0] if data.rank.is_dynamic else (data[0].merge(g[0]) or data[0])
        c = Dimension() if data.rank.is_dynamic else data[1]
        return [(et, PartialShape([n, c] + g[1:-1]))]

    def evaluate(self, inputs: list) -> list:
        data, grid = inputs
        return [grid_sample(data, grid, self.mode, self.padding_mode, self.align_corners)]
