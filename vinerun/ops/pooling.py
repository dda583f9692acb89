"""MaxPool (opset8, opset14) and AvgPool (opset1, opset14): N-D window pooling over ``[N, C, *S]``.

``rounding_type`` is ``floor`` or ``ceil``; opset14 adds ``ceil_torch`` (ceil, without a last window
that starts in the end padding — ONNX's ``ceil_mode``). MaxPool's second output holds the flat index
of each maximum over the input dims from ``axis`` on (padding excluded).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import without_attrs
from vinerun.ops._spatial import (
    effective_kernel,
    output_size,
    pad_or_crop,
    per_axis,
    per_axis_attrs,
    resolve_pads,
    windowed_shape,
    windows,
)


class PoolBase(Node):
    """Attributes and output shape shared by the pooling ops."""

    num_inputs = (1, 1)
    strides = Attr("ints", [])
    pads_begin = Attr("ints", [])
    pads_end = Attr("ints", [])
    kernel = Attr("ints")
    rounding_type = Attr("str", "floor")
    auto_pad = Attr("str", "explicit")
    roundings: tuple[str, ...] = ("floor", "ceil")

    def pool_dilations(self, n: int) -> list[int]:
        return [1] * n

    def geometry(self, n: int) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        """(kernel, strides, dilations, pads_begin, pads_end) with defaults filled in."""
        kernel, strides, pb, pe = per_axis_attrs(self, n, "kernel", "strides", "pads_begin", "pads_end")
        return kernel, strides, self.pool_dilations(n), pb, pe

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self.pooled_shape())]

    def pooled_shape(self) -> PartialShape:
        data = self.get_input_partial_shape(0)
        if self.rounding_type not in self.roundings:
            raise ValidationError(f"rounding_type '{self.rounding_type}' is not one of {self.roundings}")
        if data.rank.is_dynamic:
            return PartialShape.dynamic()
        n = data.rank.get_length() - 2
        if n < 1:
            raise ValidationError(f"data must have rank >= 3 ([N, C, spatial...]), got {data}")
        kernel, strides, dilations, pb, pe = self.geometry(n)
        return windowed_shape(data, data[1], kernel, strides, dilations, pb, pe, self.auto_pad, self.rounding_type)

    def resolved(self, sizes: list[int]) -> tuple[list[int], list[int], list[int], list[int], list[int], list[int]]:
        """(kernel, strides, dilations, pads_begin, pads_end, output sizes) for static sizes."""
        kernel, strides, dilations, pb, pe = self.geometry(len(sizes))
        eff = effective_kernel(kernel, dilations)
        pb, pe = resolve_pads(self.auto_pad, sizes, eff, strides, pb, pe)
        outs = [output_size(s, k, st, b, e, self.rounding_type)
                for s, k, st, b, e in zip(sizes, eff, strides, pb, pe, strict=True)]
        return kernel, strides, dilations, pb, pe, outs


def padded_windows(x: np.ndarray, kernel: list[int], strides: list[int], dilations: list[int], pads_begin: list[int],
                   pads_end: list[int], outs: list[int], fill: float) -> np.ndarray:
    """Windows ``[N, C, *outs, *kernel]`` of ``x`` padded with ``fill`` (more at the end if ``ceil`` needs it)."""
    sizes = x.shape[2:]
    eff = effective_kernel(kernel, dilations)
    ends = [max((o - 1) * s + k - (n + b), e)
            for o, s, k, n, b, e in zip(outs, strides, eff, sizes, pads_begin, pads_end, strict=True)]
    return windows(pad_or_crop(x, pads_begin, ends, fill), kernel, strides, dilations, outs)


def window_counts(sizes: list[int], kernel: list[int], strides: list[int], dilations: list[int], pads_begin: list[int],
                  pads_end: list[int], outs: list[int], include_pad: bool) -> np.ndarray:
    """How many elements each window averages: inside the input, or inside the explicitly padded input."""
    ones = np.ones(sizes, dtype=np.int64)
    if include_pad:
        ones = pad_or_crop(ones, pads_begin, pads_end, 1)
        pads_begin, pads_end = [0] * len(sizes), [0] * len(sizes)
    win = padded_windows(ones[None, None], kernel, strides, dilations, pads_begin, pads_end, outs, 0)
    return win.sum(axis=tuple(range(-len(sizes), 0)))


def min_value(dtype: np.dtype) -> float:
    return np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf


@register_op
class MaxPool(PoolBase):
    """Max pooling with dilations; outputs the maxima and their indices."""

    type_name, version, num_outputs = "MaxPool", "opset8", 2
    dilations = Attr("ints", [])
    index_element_type = Attr("type", Type.i64)
    axis = Attr("int", 0)

    def pool_dilations(self, n: int) -> list[int]:
        return per_axis(self.dilations, n, 1, "dilations")

    def infer(self) -> list:
        if self.index_element_type not in (Type.i64, Type.i32):
            raise ValidationError(f"index_element_type must be i32 or i64, got {self.index_element_type}")
        shape = self.pooled_shape()
        return [(self.get_input_element_type(0), shape), (self.index_element_type, shape)]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        sizes = list(x.shape[2:])
        n = len(sizes)
        kernel, strides, dilations, pb, pe, outs = self.resolved(sizes)
        win = padded_windows(x, kernel, strides, dilations, pb, pe, outs, min_value(x.dtype))
        flat = win.reshape(*win.shape[:2 + n], -1)
        arg = flat.argmax(axis=-1)
        values = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
        kidx = np.unravel_index(arg, kernel)
        grid = np.meshgrid(*[np.arange(d) for d in x.shape[:2]], *[np.arange(o) for o in outs], indexing="ij")
        coords = list(grid[:2]) + [grid[2 + i] * strides[i] - pb[i] + kidx[i] * dilations[i] for i in range(n)]
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        coords = [np.clip(c, 0, d - 1) for c, d in zip(coords, x.shape, strict=False)]
        index = np.ravel_multi_index(tuple(coords[axis:]), x.shape[axis:])
        return [values.astype(x.dtype), index.astype(self.index_element_type.to_dtype())]


@register_op
@without_attrs("dilations", "index_element_type", "axis")
class MaxPool1(MaxPool):
    """MaxPool-1: the maxima only (no dilations, no indices output)."""

    type_name, version, num_outputs = "MaxPool", "opset1", 1

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self.pooled_shape())]

    def evaluate(self, inputs: list) -> list:
        return super().evaluate(inputs)[:1]


@register_op
class MaxPool14(MaxPool):
    """MaxPool-14: MaxPool-8 plus ``rounding_type="ceil_torch"``."""

    type_name, version = "MaxPool", "opset14"
    roundings = ("floor", "ceil", "ceil_torch")


@register_op
class AvgPool(PoolBase):
    """Average pooling; ``exclude-pad`` divides by the number of input (not padding) elements."""

    type_name, version = "AvgPool", "opset1"
    exclude_pad = Attr("bool", False, ir_name="exclude-pad")

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        sizes = list(x.shape[2:])
        kernel, strides, dilations, pb, pe, outs = self.resolved(sizes)
        acc = np.float64 if x.dtype == np.float64 or x.dtype.kind in "iu" else np.float32
        win = padded_windows(x.astype(acc), kernel, strides, dilations, pb, pe, outs, 0)
        total = win.sum(axis=tuple(range(-len(sizes), 0)))
        counts = window_counts(sizes, kernel, strides, dilations, pb, pe, outs, not self.exclude_pad)
        out = total / np.maximum(counts, 1)
        return [out.astype(x.dtype)]


@register_op
class AvgPool14(AvgPool):
    """AvgPool-14: AvgPool-1 plus ``rounding_type="ceil_torch"``."""

    type_name, version = "AvgPool", "opset14"
    roundings = ("floor", "ceil", "ceil_torch")


