"""PWL design for GNA activations (``specs/gna.md`` §3): recursive descent and uniform distribution.

The error of a PWL is ``100 * max|pwl(x) - f(x)| / (max f - min f)`` over the function's domain.
Recursive descent finds the fewest segments (counting one flat saturating segment at each end,
at most 128) whose error is within ``max_error_percent``; between the pieces of a split function
(sigmoid at 0, ...) each piece is convex or concave, and its segments are minimax lines that all
share one error, so consecutive lines meet exactly at the breakpoints.

Example:
    >>> segs = design("sigmoid", max_error_percent=1.0)
    >>> len(segs) <= 128 and error_percent(curved("sigmoid"), segs) <= 1.0
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vinerun.errors import ValidationError
from vinerun.plugins.gna import arith
from vinerun.plugins.gna.pwl_functions import NEG_INF, CurvedFunction, Segment, curved
from vinerun.plugins.gna.pwl_segments import MAX_SEGMENTS, HwSegments, evaluate

RECURSIVE_DESCENT = "RECURSIVE_DESCENT"
UNIFORM_DISTRIBUTION = "UNIFORM_DISTRIBUTION"
UNIFORM_SEGMENTS = 65
_PROBES = 129  # points per interval when measuring a line's deviation
_DENSE = 20001  # points over the domain when measuring a whole PWL


def design(fn: str | CurvedFunction, max_error_percent: float = 1.0, algorithm: str = RECURSIVE_DESCENT,
           exponent: float | None = None) -> list[Segment]:
    """Float segments approximating ``fn`` (a name from ``pwl_functions`` or a ``CurvedFunction``).

    Raises ``ValidationError("Failed to converge in pwl_search! ...")`` when 128 segments do not suffice.
    """
    f = curved(fn, exponent) if isinstance(fn, str) else fn
    if algorithm == UNIFORM_DISTRIBUTION:
        return _with_ends(f, _uniform(f, UNIFORM_SEGMENTS - 2))
    if algorithm != RECURSIVE_DESCENT:
        raise ValidationError(f"unknown GNA PWL design algorithm {algorithm!r}: use {RECURSIVE_DESCENT} "
                              f"or {UNIFORM_DISTRIBUTION}")
    if not 0 < max_error_percent <= 128:
        raise ValidationError(f"pwl_max_error_percent must be in (0, 128], got {max_error_percent}")
    target = max_error_percent / 100.0 * f.value_range()
    budget = target
    for _ in range(20):  # shrink the budget if the dense check finds a probe-missed excess
        inner = _descent(f, budget)
        if len(inner) + 2 > MAX_SEGMENTS:
            break
        segs = _with_ends(f, inner)
        if error_percent(f, segs) <= max_error_percent:
            return segs
        budget *= 0.97
    raise ValidationError(f"Failed to converge in pwl_search! {f.name} needs more than {MAX_SEGMENTS} segments "
                          f"for pwl_max_error_percent={max_error_percent}")


def evaluate_float(segments: Sequence[Segment], x: np.ndarray) -> np.ndarray:
    """The float PWL: segment k (the last with ``alpha_k <= x``; the first below it) at ``x``."""
    x = np.asarray(x, dtype=np.float64)
    alphas = np.array([s.alpha for s in segments])
    k = np.clip(np.searchsorted(alphas, x, side="right") - 1, 0, None)
    m = np.array([s.m for s in segments])[k]
    b = np.array([s.b for s in segments])[k]
    return m * x + b


def error_percent(f: CurvedFunction, segments: Sequence[Segment], samples: int = _DENSE) -> float:
    """``100 * max|pwl - f| / (max f - min f)`` over ``samples`` points of the domain and its breakpoints."""
    x = _domain_points(f, segments, samples)
    return 100.0 * float(np.max(np.abs(evaluate_float(segments, x) - f.f(x)))) / f.value_range()


def hw_error_percent(f: CurvedFunction, hw: HwSegments, s_in: float, s_out: float, samples: int = _DENSE) -> float:
    """The integer PWL's error: ``x_q = sat32(round(x*s_in))``, ``y = evaluate(x_q)/s_out`` against ``f(x_q/s_in)``."""
    x_q = arith.saturate(arith.round_half_away(np.linspace(f.lo, f.hi, samples) * s_in), 32)
    y = evaluate(x_q, hw).astype(np.float64) / s_out
    return 100.0 * float(np.max(np.abs(y - f.f(x_q / s_in)))) / f.value_range()


def _domain_points(f: CurvedFunction, segments: Sequence[Segment], samples: int) -> np.ndarray:
    inner = [s.alpha for s in segments if f.lo <= s.alpha <= f.hi]
    eps = 1e-9 * (f.hi - f.lo)
    near = [a + d for a in inner for d in (-eps, eps) if f.lo <= a + d <= f.hi]
    return np.concatenate([np.linspace(f.lo, f.hi, samples), np.array(inner + near)])


def _with_ends(f: CurvedFunction, inner: list[Segment]) -> list[Segment]:
    low = float(f.f(np.array(f.lo))) if f.low_value is None else f.low_value
    high = float(f.f(np.array(f.hi)))
    return [Segment(NEG_INF, 0.0, low), *inner, Segment(f.hi, 0.0, high)]


def _chord(f: CurvedFunction, a: float, b: float) -> tuple[float, float, float]:
    """Chord slope and intercept on [a, b], and half the spread of ``f - chord`` (the minimax error)."""
    fa, fb = float(f.f(np.array(a))), float(f.f(np.array(b)))
    m = (fb - fa) / (b - a)
    c = fa - m * a
    x = np.linspace(a, b, _PROBES)
    dev = f.f(x) - (m * x + c)
    return m, c, float(np.max(dev) - np.min(dev)) / 2.0


def _descent(f: CurvedFunction, err: float) -> list[Segment]:
    """Per convex/concave piece: the fewest minimax lines within ``err``, then the smallest common error
    that keeps that count (bisection), each line the chord shifted by that error toward ``f``."""
    out: list[Segment] = []
    counts = [len(_cuts(f, a, b, err)) for a, b in f.pieces()]
    if sum(counts) + 2 > MAX_SEGMENTS:
        return [Segment(0.0, 0.0, 0.0)] * (MAX_SEGMENTS - 1)  # too many: the caller reports it
    for (a, b), n in zip(f.pieces(), counts, strict=True):
        lo_e, hi_e = 0.0, err
        for _ in range(24):
            mid = (lo_e + hi_e) / 2
            if len(_cuts(f, a, b, mid, limit=n)) <= n:
                hi_e = mid
            else:
                lo_e = mid
        cuts = _cuts(f, a, b, hi_e)
        starts = [a, *cuts[:-1]]
        for t0, t1 in zip(starts, cuts, strict=True):
            m, c, _ = _chord(f, t0, t1)
            mid_dev = float(f.f(np.array((t0 + t1) / 2))) - (m * (t0 + t1) / 2 + c)
            out.append(Segment(t0, m, c + math.copysign(hi_e, mid_dev)))
    return out


def _cuts(f: CurvedFunction, a: float, b: float, err: float, limit: int = MAX_SEGMENTS) -> list[float]:
    """Greedy interval ends from ``a``: each as far as its minimax line stays within ``err``."""
    cuts: list[float] = []
    t = a
    while t < b and len(cuts) <= limit:
        if _chord(f, t, b)[2] <= err:
            cuts.append(b)
            break
        lo, hi = t, b
        for _ in range(40):
            mid = (lo + hi) / 2
            if _chord(f, t, mid)[2] <= err:
                lo = mid
            else:
                hi = mid
        t = lo if lo > t else hi
        cuts.append(t)
    return cuts


def _uniform(f: CurvedFunction, n: int) -> list[Segment]:
    """The legacy design: ``n`` chords over equal parts of the domain."""
    xs = np.linspace(f.lo, f.hi, n + 1)
    ys = f.f(xs)
    m = np.diff(ys) / np.diff(xs)
    return [Segment(float(x), float(s), float(y - s * x)) for x, s, y in zip(xs[:-1], m, ys[:-1], strict=True)]
