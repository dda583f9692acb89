"""PWL segments in the hardware's integer form, and their bit-exact evaluation (``specs/gna.md`` §3).

A segment is ``int32 xBase`` (a multiple of 4 whose low 2 bits select the slope shift 8/16/24/32),
``int16 yBase`` and ``int16 Slope``; at most 128 of them.

Example:
    >>> hw = quantize_segments([Segment(-math.inf, 0.0, 0.0), Segment(0.0, 1.0, 0.0)], s_in=4.0, s_out=4.0)
    >>> evaluate(np.array([-8, 0, 5, 40000]), hw).tolist()
    [0, 0, 5, 32767]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vinerun.errors import ValidationError
from vinerun.plugins.gna import arith
from vinerun.plugins.gna.pwl_functions import Segment

MAX_SEGMENTS = 128


@dataclass(frozen=True)
class HwSegments:
    """Integer PWL segments as GNA stores them (``Gna2PwlSegment``), in ascending xBase order.

    Example:
        >>> HwSegments(np.array([0 | 1], np.int32), np.array([7], np.int16), np.array([256], np.int16)).shifts.tolist()
        [16]
    """

    x_base: np.ndarray
    y_base: np.ndarray
    slope: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.x_base)
        if not 1 <= n <= MAX_SEGMENTS:
            raise ValidationError(f"a GNA PWL has 1..{MAX_SEGMENTS} segments, got {n}")
        if len(self.y_base) != n or len(self.slope) != n:
            raise ValidationError("GNA PWL xBase, yBase and Slope arrays differ in length")
        if np.any(np.diff(self.starts) < 0):
            raise ValidationError("GNA PWL segments must be in ascending xBase order")

    @property
    def starts(self) -> np.ndarray:
        """``xBase & ~3`` as int64."""
        return np.asarray(self.x_base, dtype=np.int64) & ~3

    @property
    def shifts(self) -> np.ndarray:
        """``8 * ((xBase & 3) + 1)``: 8, 16, 24 or 32."""
        return 8 * ((np.asarray(self.x_base, dtype=np.int64) & 3) + 1)

    def __len__(self) -> int:
        return len(self.x_base)


def quantize_slope(s: float) -> tuple[int, int]:
    """``(Slope, shift)`` for a slope ``s`` in output-per-input quanta (``gna_slope``).

    The largest index i in 3, 2, 1 for which ``round(s*2^(8(i+1)))`` fits int16, else 0 (saturated).

    >>> quantize_slope(0.25), quantize_slope(0.001), quantize_slope(200.0)
    ((16384, 16), (16777, 24), (32767, 8))
    """
    for i in (3, 2, 1):
        q = int(arith.round_half_away(s * 2.0 ** (8 * (i + 1))))
        if arith.INT16[0] <= q <= arith.INT16[1]:
            return q, 8 * (i + 1)
    return int(arith.saturate(arith.round_half_away(s * 256.0), 16)), 8


def quantize_segments(segments: Sequence[Segment], s_in: float, s_out: float) -> HwSegments:
    """Quantize float segments for input scale ``s_in`` and output scale ``s_out`` (``make_pwl``).

    ``xBase = (trunc(alpha*s_in) & ~3) | i``, ``yBase = sat16(round((m*alpha+b)*s_out))``. A first
    segment starting at -inf starts at the int32 minimum if flat, else where its line leaves int16
    (moved right until its yBase fits, so the line is not bent by saturating yBase).
    A start that does not advance past the previous one is moved 4 quanta after it.
    """
    if not segments:
        raise ValidationError("a GNA PWL needs at least one segment")
    if len(segments) > MAX_SEGMENTS:
        raise ValidationError(f"a GNA PWL has at most {MAX_SEGMENTS} segments, got {len(segments)}")
    xs, ys, slopes = [], [], []
    for k, seg in enumerate(segments):
        alpha = seg.alpha
        if k == 0 and math.isinf(alpha):
            alpha = _first_start(seg, s_in, s_out)
        x_q = min(max(math.trunc(alpha * s_in), arith.INT32[0]), arith.INT32[1]) & ~3
        if xs and x_q <= xs[-1]:
            x_q = xs[-1] + 4
        if k == 0:
            x_q, alpha = _inside_int16(seg, x_q, s_in, s_out)
        q, shift = quantize_slope(seg.m * s_out / s_in)
        xs.append(x_q)
        ys.append(int(arith.saturate(arith.round_half_away(seg.value(alpha) * s_out), 16)))
        slopes.append((q, shift))
    x_base = np.array([x | (shift // 8 - 1) for x, (_, shift) in zip(xs, slopes, strict=True)], dtype=np.int64)
    if x_base.max() > arith.INT32[1]:
        raise ValidationError(f"GNA PWL segment start {int(x_base.max())} exceeds int32 (input scale {s_in})")
    return HwSegments(x_base.astype(np.int32), np.array(ys, dtype=np.int16),
                      np.array([q for q, _ in slopes], dtype=np.int16))


def _first_start(seg: Segment, s_in: float, s_out: float) -> float:
    lo = arith.INT32[0] / s_in
    if seg.m == 0:
        return lo
    bound = (arith.INT16[0] if seg.m > 0 else arith.INT16[1]) / s_out
    return max(lo, (bound - seg.b) / seg.m)


def _inside_int16(seg: Segment, x_q: int, s_in: float, s_out: float) -> tuple[int, float]:
    """Move a sloped first segment's start right (by 4 quanta) until its value fits int16."""
    for _ in range(64):
        y = seg.value(x_q / s_in) * s_out
        if seg.m == 0 or arith.INT16[0] - 0.5 < y < arith.INT16[1] + 0.5:
            break
        x_q += 4
    return x_q, x_q / s_in


def evaluate(x: np.ndarray, hw: HwSegments, out_bits: int = 16) -> np.ndarray:
    """The hardware PWL on int32 / int16 ``x``: ``((x - xb_k) * Slope_k >> sh_k) + yBase_k``, saturated.

    ``x <= xb_0`` gives ``yBase_0``; otherwise k is the last segment with ``xb_k <= x``; the shift
    is arithmetic; the result saturates to ``out_bits`` (16; 8 or 32 for other output sizes).
    """
    x64 = np.asarray(x, dtype=np.int64)
    starts = hw.starts
    k = np.clip(np.searchsorted(starts, x64, side="right") - 1, 0, None)
    y = ((x64 - starts[k]) * hw.slope.astype(np.int64)[k] >> hw.shifts[k]) + hw.y_base.astype(np.int64)[k]
    y = np.where(x64 <= starts[0], int(hw.y_base[0]), y)
    return arith.saturate(y, out_bits)
