"""The activations GNA approximates by PWL, with their domains (``specs/gna.md`` §3 table).

Curved functions carry a domain and the points where they are split into convex / concave
pieces; piecewise-linear ones (ReLU, Abs, Sign, ...) carry their exact segments.

Example:
    >>> f = curved("sigmoid")
    >>> (f.lo, f.hi, f.breaks)
    (-10.0, 10.0, (0.0,))
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vinerun.errors import UnsupportedOpError, ValidationError

NEG_INF = -math.inf


@dataclass(frozen=True)
class Segment:
    """A float PWL segment: ``y = m*x + b`` from ``alpha`` up to the next segment's alpha.

    Example:
        >>> Segment(0.0, 1.0, 0.0).value(2.0)
        2.0
    """

    alpha: float
    m: float
    b: float

    def value(self, x: float) -> float:
        return self.m * x + self.b


@dataclass(frozen=True)
class CurvedFunction:
    """A smooth activation on ``[lo, hi]``, convex or concave between ``breaks``.

    Outside the domain the PWL holds ``low_value`` / ``high_value`` (one flat segment each end).

    Example:
        >>> float(curved("tanh").f(np.array(0.0)))
        0.0
    """

    name: str
    f: Callable[[np.ndarray], np.ndarray]
    lo: float
    hi: float
    breaks: tuple[float, ...] = ()
    low_value: float | None = None

    def pieces(self) -> list[tuple[float, float]]:
        """The ``[a, b]`` intervals designed separately."""
        cuts = [self.lo, *[c for c in self.breaks if self.lo < c < self.hi], self.hi]
        return list(zip(cuts[:-1], cuts[1:], strict=True))

    def value_range(self, samples: int = 10001) -> float:
        """``max f - min f`` over the domain: the denominator of the error percentage."""
        y = self.f(np.linspace(self.lo, self.hi, samples))
        return float(np.max(y) - np.min(y))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(x, dtype=np.float64)))


def _softsign(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / (1.0 + np.abs(x))


_LOG_LO, _LOG_HI = 0.001, 2981.0
_CURVED: dict[str, CurvedFunction] = {
    "sigmoid": CurvedFunction("sigmoid", _sigmoid, -10.0, 10.0, (0.0,)),
    "tanh": CurvedFunction("tanh", np.tanh, -5.0, 5.0, (0.0,)),
    "softsign": CurvedFunction("softsign", _softsign, -10.0, 10.0, (0.0,)),
    "exp": CurvedFunction("exp", np.exp, -math.log2(32767), math.log10(32767), (0.045,)),
    "log": CurvedFunction("log", np.log, _LOG_LO, _LOG_HI, (), low_value=-11.0),
    "neglog": CurvedFunction("neglog", lambda x: -np.log(x), _LOG_LO, _LOG_HI, (), low_value=11.0),
    "neghalflog": CurvedFunction("neghalflog", lambda x: -0.5 * np.log(x), _LOG_LO, _LOG_HI, (), low_value=5.5),
}


def curved(name: str, exponent: float | None = None) -> CurvedFunction:
    """The curved function ``name`` (sigmoid, tanh, softsign, exp, log, neglog, neghalflog, power)."""
    if name == "power":
        if exponent is None:
            raise ValidationError("GNA PWL power needs an exponent")
        return power(exponent)
    if name not in _CURVED:
        raise UnsupportedOpError(f"GNA has no PWL design for activation {name!r}")
    return _CURVED[name]


def power(exponent: float) -> CurvedFunction:
    """``x**p`` on [-16, 16], or [0, 16] for a non-integer exponent (split at 0)."""
    p = float(exponent)
    if p in (0.0, 1.0):
        raise ValidationError(f"GNA power with exponent {p:g} is not curved: use its exact segments")
    lo = -16.0 if p.is_integer() else 0.0
    return CurvedFunction(f"power({p:g})", lambda x: np.power(np.asarray(x, dtype=np.float64), p), lo, 16.0,
                          (0.0,))


def exact(name: str, *, alpha: float = 0.0, lo: float = -50.0, hi: float = 50.0,
          exponent: float | None = None) -> list[Segment]:
    """Segments of the functions GNA represents exactly (the first one starts at -inf).

    ``relu``, ``leaky_relu`` (``alpha``), ``identity``, ``clamp`` (``lo``/``hi``; Kaldi LSTM ±50),
    ``sign`` (3 flat segments), ``abs`` (slopes ±1), ``power`` with exponent 0 or 1.
    """
    if name == "relu":
        return [Segment(NEG_INF, 0.0, 0.0), Segment(0.0, 1.0, 0.0)]
    if name == "leaky_relu":
        return [Segment(NEG_INF, alpha, 0.0), Segment(0.0, 1.0, 0.0)]
    if name == "identity":
        return [Segment(NEG_INF, 1.0, 0.0)]
    if name == "clamp":
        if not lo < hi:
            raise ValidationError(f"GNA clamp needs lo < hi, got [{lo}, {hi}]")
        return [Segment(NEG_INF, 0.0, lo), Segment(lo, 1.0, 0.0), Segment(hi, 0.0, hi)]
    if name == "sign":
        return [Segment(NEG_INF, 0.0, -1.0), Segment(0.0, 0.0, 0.0), Segment(1e-30, 0.0, 1.0)]
    if name == "abs":
        return [Segment(NEG_INF, -1.0, 0.0), Segment(0.0, 1.0, 0.0)]
    if name == "power" and exponent in (0.0, 1.0):
        return [Segment(NEG_INF, 0.0, 1.0)] if exponent == 0.0 else [Segment(NEG_INF, 1.0, 0.0)]
    raise UnsupportedOpError(f"GNA has no exact PWL for activation {name!r}")
