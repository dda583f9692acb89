"""Scale-factor propagation rules per layer kind (``specs/gna.md`` §2, "Scale-factor calculator").

Each helper answers one layer's question locally; the compiler runs them in topological order and
restarts upstream when a helper says an input has to be requantized.

Example:
    >>> activation_output_scale("sigmoid", s_in=16384.0)
    2048.0
    >>> add_as_diagonal(s_a=2048.0, s_b=4096.0).weight
    2
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vinerun.errors import ValidationError
from vinerun.plugins.gna import arith
from vinerun.plugins.gna.pwl_segments import quantize_slope

ACTIVATION_SCALE = 2048.0
ACTIVATION_SCALE_INT8_INPUT = 4.0
IDENTITY_SCALES = (2049.0, 1024.5)
INT32_MAX = 2**31 - 1


def affine_output_scale(s_w: float, s_in: float) -> float:
    """Affine / conv / ScaleShift: ``s_out = s_w * s_in``."""
    return s_w * s_in


def reduce_for_output_stats(s_w: float, s_in: float, max_abs_out: float) -> float:
    """With output statistics: divide s_w by ``max(1, max|out|*s_out/INT32_MAX)``."""
    return s_w / max(1.0, max_abs_out * s_w * s_in / INT32_MAX)


def slope_error(slope: float, s_in: float, s_out: float) -> float:
    """How far the int16 hardware form of ``slope`` is from it (0 when exactly representable)."""
    q, shift = quantize_slope(slope * s_out / s_in)
    return abs(q / 2.0**shift * s_in / s_out - slope)


def activation_output_scale(kind: str, s_in: float, *, int8_input: bool = False,
                            max_abs_f: float | None = None) -> float:
    """Output scale of an activation (PWL) layer.

    2048 (4 on the int8-input path); identity picks 2049 or 1024.5, whichever represents slope 1
    better; ReLU halves 2048 when ``2048*s_in`` overflows int32; power uses ``32767/max|f|`` on
    [-16, 16] (``max_abs_f`` must be given).
    """
    base = ACTIVATION_SCALE_INT8_INPUT if int8_input else ACTIVATION_SCALE
    if kind == "identity":
        return min(IDENTITY_SCALES, key=lambda s: slope_error(1.0, s_in, s))
    if kind == "relu" and base * s_in > INT32_MAX - 1:
        return base / 2
    if kind == "power":
        if not max_abs_f:
            raise ValidationError("GNA power activation: the output scale needs max|f(x)| on [-16, 16] (> 0)")
        return 32767.0 / max_abs_f
    return base


@dataclass(frozen=True)
class DiagonalAdd:
    """An Add/Sub run as a diagonal affine: int16 input ``a`` times ``weight``, plus bias ``b``.

    ``s_b`` is the (possibly requantized) scale the 32-bit input must arrive with; ``s_out = s_b``.

    Example:
        >>> add_as_diagonal(100.0, 1e9)  # weight above 32767: b is requantized to s_a*32767
        DiagonalAdd(weight=32767, s_b=3276700.0, requantize_b=True)
    """

    weight: int
    s_b: float
    requantize_b: bool

    @property
    def s_out(self) -> float:
        return self.s_b


def add_as_diagonal(s_a: float, s_b: float, *, subtract: bool = False, int8: bool = False) -> DiagonalAdd:
    """Eltwise Add/Sub: weight ``round(s_b/s_a)`` (negated for Sub), capping at 32767 (127)."""
    limit = 127 if int8 else 32767
    w = int(arith.round_half_away(s_b / s_a))
    requant = w > limit
    if requant:
        w, s_b = limit, s_a * limit
    return DiagonalAdd(-w if subtract else w, float(s_b), requant)


def mul_output_scale(s_0: float, s_1: float) -> float:
    """Eltwise Mul / Gemm: one input is the diagonal weights, ``s_out = s_0 * s_1``."""
    return s_0 * s_1


@dataclass(frozen=True)
class ConcatInput:
    """One input of a concat: its scale and what produces it (``"input"``, ``"activation"``, ``"const"``,
    ``"memory"``, ``"other"``).

    Example:
        >>> concat_scale([ConcatInput(2048.0, "activation"), ConcatInput(100.0, "input")])
        100.0
    """

    scale: float
    kind: str = "other"


def concat_scale(inputs: Sequence[ConcatInput], fake_quantized: bool = False) -> float:
    """The one scale all concat inputs must share.

    A true input's scale; else the first non-activation input whose scale is not 1; with
    FakeQuantize the minimum; else the first input's. The rest are requantized to it.
    """
    if not inputs:
        raise ValidationError("concat has no inputs")
    scales = [i.scale for i in inputs]
    if all(np.isclose(s, scales[0], rtol=1e-6) for s in scales):
        return scales[0]
    if fake_quantized:
        return min(scales)
    for i in inputs:
        if i.kind == "input":
            return i.scale
    for i in inputs:
        if i.kind != "activation" and i.scale != 1.0:
            return i.scale
    return scales[0]


def check_concat(inputs: Sequence[ConcatInput], scale: float) -> None:
    """After requantization every input must carry ``scale``."""
    if any(not np.isclose(i.scale, scale, rtol=1e-6) for i in inputs):
        raise ValidationError("layers entered into concat have different scale factors")


def memory_scale(s_read: float, s_assign: float) -> tuple[float, bool]:
    """A ReadValue/Assign pair shares one scale: returns ``(s_assign, differs)``.

    When they differ, the compiler gives the variable the Assign side's scale and restarts from the
    ReadValue — the first time only; once the variable's scale is chosen, the Assign side is
    requantized into it instead (an activation's output scale), so a memory cycle settles.
    """
    same = bool(np.isclose(s_read, s_assign, rtol=1e-6))
    return s_assign, not same
