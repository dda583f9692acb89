"""Helpers shared by the windowed ops (convolutions, pooling): padding, output sizes, windows.

Conventions follow OpenVINO: ``auto_pad`` is one of ``explicit`` (also ``notset``), ``same_upper``,
``same_lower`` or ``valid``; ``pads_begin``/``pads_end`` cover the spatial axes only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.shape import Dimension, PartialShape

AUTO_PADS = ("explicit", "notset", "same_upper", "same_lower", "valid")
# per-axis window attributes, and the value an empty list means on every axis
_PER_AXIS_DEFAULTS = {"kernel": 1, "strides": 1, "dilations": 1, "pads_begin": 0, "pads_end": 0, "output_padding": 0}


def check_auto_pad(auto_pad: str) -> str:
    mode = (auto_pad or "explicit").lower()
    if mode not in AUTO_PADS:
        raise ValidationError(f"auto_pad '{auto_pad}' is not one of {', '.join(AUTO_PADS)}")
    return "explicit" if mode == "notset" else mode


def per_axis(values: Sequence[int] | None, n: int, default: int, what: str) -> list[int]:
    """``values`` as a list of ``n`` ints; empty means ``default`` on every axis."""
    if not values:
        return [default] * n
    if len(values) != n:
        raise ValidationError(f"{what} has {len(values)} values, expected one per spatial axis ({n})")
    return [int(v) for v in values]


def per_axis_attrs(node: Any, n: int, *names: str) -> list[list[int]]:
    """The window attributes ``names`` of ``node`` (``strides``, ``pads_begin``, ...) as ``n`` ints each."""
    return [per_axis(getattr(node, name), n, _PER_AXIS_DEFAULTS[name], name) for name in names]


def effective_kernel(kernel: Sequence[int], dilations: Sequence[int]) -> list[int]:
    return [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=False)]


def same_pads(mode: str, size: int, eff_kernel: int, stride: int) -> tuple[int, int]:
    """Begin/end padding that makes the output ``ceil(size / stride)`` long (extra at the end for upper)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + eff_kernel - size, 0)
    small = total // 2
    return (small, total - small) if mode == "same_upper" else (total - small, small)


def resolve_pads(auto_pad: str, sizes: Sequence[int], eff_kernel: Sequence[int], strides: Sequence[int],
                 pads_begin: Sequence[int], pads_end: Sequence[int]) -> tuple[list[int], list[int]]:
    """The explicit pads ``auto_pad`` implies for static spatial ``sizes``."""
    mode = check_auto_pad(auto_pad)
    if mode == "valid":
        return [0] * len(sizes), [0] * len(sizes)
    if mode in ("same_upper", "same_lower"):
        pairs = [same_pads(mode, s, k, st) for s, k, st in zip(sizes, eff_kernel, strides, strict=False)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return list(pads_begin), list(pads_end)


def output_size(size: int, eff_kernel: int, stride: int, pad_begin: int, pad_end: int,
                rounding: str = "floor") -> int:
    """Windows along one axis: ``floor`` or ``ceil`` of the span over the stride, plus one.

    ``ceil_torch`` is ``ceil`` without a last window that would start in the end padding.
    """
    span = size + pad_begin + pad_end - eff_kernel
    if span < 0:
        padded = size + pad_begin + pad_end
        raise ValidationError(f"the window ({eff_kernel}) is larger than the padded input ({padded})")
    out = (-(-span // stride) if rounding in ("ceil", "ceil_torch") else span // stride) + 1
    if rounding == "ceil_torch" and out > 1 and (out - 1) * stride >= size + pad_begin:
        out -= 1
    return out


def windowed_shape(data: PartialShape, channels: Dimension | int, kernel: Sequence[int], strides: Sequence[int],
                   dilations: Sequence[int], pads_begin: Sequence[int], pads_end: Sequence[int], auto_pad: str,
                   rounding: str = "floor") -> PartialShape:
    """Output shape ``[N, channels, spatial...]`` of a sliding-window op over ``data``."""
    dims = list(data)
    eff = effective_kernel(kernel, dilations)
    mode = check_auto_pad(auto_pad)
    out: list[Dimension | int] = [dims[0], channels]
    for i, d in enumerate(dims[2:]):
        if d.is_dynamic:
            out.append(Dimension())
            continue
        size = d.get_length()
        if mode in ("same_upper", "same_lower"):
            out.append(-(-size // strides[i]))
            continue
        pb, pe = (0, 0) if mode == "valid" else (pads_begin[i], pads_end[i])
        out.append(output_size(size, eff[i], strides[i], pb, pe, rounding))
    return PartialShape(out)


def pad_or_crop(x: np.ndarray, begin: Sequence[int], end: Sequence[int], value: float = 0) -> np.ndarray:
    """Pad (positive) or crop (negative) the trailing ``len(begin)`` axes of ``x``."""
    lead = x.ndim - len(begin)
    crop = tuple([slice(None)] * lead + [slice(max(-b, 0), x.shape[lead + i] - max(-e, 0))
                                         for i, (b, e) in enumerate(zip(begin, end, strict=False))])
    x = x[crop]
    widths = [(0, 0)] * lead + [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=False)]
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, constant_values=value)
    return x


def windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
            out_sizes: Sequence[int]) -> np.ndarray:
    """Strided, dilated windows of the (already padded) trailing axes: ``[..., *out_sizes, *kernel]``.

    Missing room at the end (a ``ceil`` output) must have been padded by the caller.
    """
    n = len(kernel)
    lead = x.ndim - n
    eff = effective_kernel(kernel, dilations)
    view = np.lib.stride_tricks.sliding_window_view(x, eff, axis=tuple(range(lead, x.ndim)))
    sl = ([slice(None)] * lead + [slice(0, (o - 1) * s + 1, s) for o, s in zip(out_sizes, strides, strict=False)]
          + [slice(None, None, d) for d in dilations])
    return view[tuple(sl)]


def accumulation_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype references compute in: f64 for f64, f32 for other floats, i64 for integers."""
    if dtype == np.float64:
        return np.dtype(np.float64)
    if dtype.kind in "iub":
        return np.dtype(np.int64)
    return np.dtype(np.float32)
