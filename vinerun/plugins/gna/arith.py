"""GNA's bit-exact integer primitives: rounding, saturation, input/output conversion, accumulation.

Everything follows ``specs/gna.md`` §2 (input/output conversion) and checklist item 7 (the
affine accumulator). Arrays are NumPy; intermediates are int64 so nothing wraps silently.

Example:
    >>> quantize_input(np.array([0.25, -0.25, 3.0]), 2.0).tolist()
    [1, -1, 6]
    >>> saturate(np.array([40000, -40000]), 16).tolist()
    [32767, -32768]
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError

INT8 = (-(2**7), 2**7 - 1)
INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
_BOUNDS = {8: INT8, 16: INT16, 32: INT32}
_DTYPES = {8: np.int8, 16: np.int16, 32: np.int32}

#: GNA 2.0 int16 accumulator buffer (elements) for batch 1..8 (spec checklist 7)
GNA2_BUFFER_ELEMENTS = (12288, 12288, 12096, 12288, 12000, 12096, 12096, 12288)


def round_half_away(x: np.ndarray | float) -> np.ndarray:
    """Round half away from zero, as the C ``(int)(v ± 0.5)`` of the plugin, to int64.

    The addition of ±0.5 happens in the dtype of ``x`` (float32 input behaves like the C float code).

    >>> round_half_away(np.array([0.5, -0.5, 2.5, -2.5, 1.49])).tolist()
    [1, -1, 3, -3, 1]
    """
    a = np.asarray(x)
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(np.float64)
    half = np.where(a >= 0, a.dtype.type(0.5), a.dtype.type(-0.5))
    return np.trunc(a + half).astype(np.int64)


def saturate(x: np.ndarray, bits: int) -> np.ndarray:
    """Clamp integers (or already-rounded floats) to the signed range of ``bits`` (8, 16, 32) bits.

    The result has the matching NumPy integer type (int8 / int16 / int32).
    """
    if bits not in _BOUNDS:
        raise ValidationError(f"GNA saturation width must be 8, 16 or 32 bits, got {bits}")
    lo, hi = _BOUNDS[bits]
    return np.clip(np.asarray(x), lo, hi).astype(_DTYPES[bits])


def quantize(x: np.ndarray, scale: float, bits: int) -> np.ndarray:
    """``sat_bits(round_half_away(x * scale))`` computed in float64 (weights, biases)."""
    return saturate(round_half_away(np.asarray(x, dtype=np.float64) * float(scale)), bits)


def quantize_input(x: np.ndarray, scale: float) -> np.ndarray:
    """Input conversion of ``preprocessing.cpp``: ``q = (int16)clamp(x*s ± 0.5)`` in float32 arithmetic."""
    _check_scale(scale, "input")
    v = np.asarray(x, dtype=np.float32) * np.float32(scale)
    return saturate(round_half_away(v), 16)


def dequantize(q: np.ndarray, scale: float) -> np.ndarray:
    """Output conversion: ``y = q / s_out`` as float32."""
    _check_scale(scale, "output")
    return (np.asarray(q, dtype=np.float32) / np.float32(scale)).astype(np.float32)


def buffer_elements(target: str, batch: int, input_bytes: int = 2) -> int:
    """GNA's accumulator buffer (elements) for ``batch`` vectors: checklist item 7.

    ``target`` is ``"GNA_TARGET_2_0"`` or a 3.x target; the 3.x formula is
    ``floor(4096 / (16 g)) * (8 * 16 / bytes) * g``.
    """
    if not 1 <= batch <= 8:
        raise ValidationError(f"GNA affine batch must be 1..8, got {batch}")
    if input_bytes not in (1, 2):
        raise ValidationError(f"GNA input element size must be 1 or 2 bytes, got {input_bytes}")
    if target == "GNA_TARGET_2_0":
        return GNA2_BUFFER_ELEMENTS[batch - 1]
    return (4096 // (16 * batch)) * (8 * 16 // input_bytes) * batch


def accumulation_chunk(target: str, batch: int, input_bytes: int = 2) -> int:
    """Inputs summed between two int32 saturations: ``BufferElementCount / batch``."""
    return buffer_elements(target, batch, input_bytes) // batch


def affine(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *, chunk: int | None = None,
           multipliers: np.ndarray | None = None) -> np.ndarray:
    """Saturating integer affine ``y[n, r] = b[r] + m[r] * Σ_j w[r, j] * x[n, j]`` as GNA computes it.

    ``x`` is ``[N, K]`` int16 (or int8), ``w`` is ``[R, K]`` int16 / int8, ``b`` is ``[R]`` int32,
    ``multipliers`` the per-row i8 multipliers. The accumulator starts at the bias and is
    saturated to int32 after every ``chunk`` inputs (``None``: once, at the end). Partial sums are
    formed by a float64 matrix product, exact because ``|Σ| < 2**53`` for ``K < 2**21``; weights
    already held as integer-valued float64 (prepacked once per compiled model) are used without a copy.

    >>> x, w = np.array([[32767, 32767, 32767]]), np.array([[32767, 32767, -32767]])
    >>> affine(x, w, [10**6]).tolist(), affine(x, w, [10**6], chunk=2).tolist()  # chunk 1 saturates
    ([[1074676289]], [[1073807358]])
    """
    x2 = np.atleast_2d(np.asarray(x))
    w2 = np.asarray(w)
    if w2.ndim != 2 or x2.shape[1] != w2.shape[1]:
        raise ValidationError(f"GNA affine: input {x2.shape} and weights {w2.shape} do not match ([N, K] x [R, K])")
    k = w2.shape[1]
    if k >= 2**21:
        raise ValidationError(f"GNA affine: {k} inputs exceed the emulator's exact range (2**21)")
    rows = w2.shape[0]
    acc = np.zeros((x2.shape[0], rows), dtype=np.int64)
    if b is not None:
        acc += np.asarray(b, dtype=np.int64).reshape(1, rows)
    mult = None if multipliers is None else np.asarray(multipliers, dtype=np.int64).reshape(1, rows)
    step = k if chunk is None or chunk >= k else int(chunk)
    if step <= 0:
        raise ValidationError(f"GNA affine: accumulation chunk must be positive, got {chunk}")
    xf = np.asarray(x2, dtype=np.float64)
    wf = np.asarray(w2, dtype=np.float64)
    for start in range(0, max(k, 1), step):
        # weights on the left ([R, k] @ [k, N]): BLAS streams the row-major weights once (3x faster than x @ w.T)
        part = (wf[:, start:start + step] @ xf[:, start:start + step].T).T.astype(np.int64)
        if mult is not None:
            part = part * mult
        acc = np.clip(acc + part, *INT32)
    return acc.astype(np.int32)


def diagonal(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """ElementWiseAffine: ``y = sat32(b + w * x)`` element by element (eltwise as a diagonal affine)."""
    acc = np.asarray(x, dtype=np.int64) * np.asarray(w, dtype=np.int64)
    if b is not None:
        acc = acc + np.asarray(b, dtype=np.int64)
    return saturate(acc, 32)


def _check_scale(scale: float, what: str) -> None:
    if not np.isfinite(scale) or scale == 0:
        raise ValidationError(f"{what} scale factor of 0.0f or +-inf not supported (got {scale})")
