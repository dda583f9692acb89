"""ONNX pooling ops OpenVINO has no op for: dilated AveragePool, LpPool and MaxUnpool (version "onnx").

Attributes use OpenVINO's pooling names (``kernel``, ``strides``, ``pads_begin``, ``pads_end``, ...).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._spatial import per_axis, per_axis_attrs
from vinerun.ops.pooling import AvgPool14, PoolBase, padded_windows


@register_op
class AveragePool(AvgPool14):
    """ONNX AveragePool with ``dilations`` (OpenVINO's AvgPool has none)."""

    type_name, version = "AveragePool", "onnx"
    dilations = Attr("ints", [])

    def pool_dilations(self, n: int) -> list[int]:
        return per_axis(self.dilations, n, 1, "dilations")


@register_op
class LpPool(PoolBase):
    """``(sum |x|^p) ^ (1/p)`` over each window; padding counts as zeros."""

    type_name, version = "LpPool", "onnx"
    roundings = ("floor", "ceil", "ceil_torch")
    dilations = Attr("ints", [])
    p = Attr("int", 2)

    def pool_dilations(self, n: int) -> list[int]:
        return per_axis(self.dilations, n, 1, "dilations")

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        sizes = list(x.shape[2:])
        kernel, strides, dilations, pb, pe, outs = self.resolved(sizes)
        acc = np.float64 if x.dtype == np.float64 else np.float32
        powered = np.power(np.abs(x.astype(acc)), self.p)
        win = padded_windows(powered, kernel, strides, dilations, pb, pe, outs, 0)
        total = win.sum(axis=tuple(range(-len(sizes), 0)))
        return [np.power(total, 1.0 / self.p).astype(x.dtype)]


@register_op
class MaxUnpool(Node):
    """Scatter values to the flat positions MaxPool reported; zeros elsewhere.

    The indices are flat positions in the default output shape, ``(in - 1) * stride + kernel - pads``
    per axis. Input 2 (a full shape) may ask for a larger output: positions keep their coordinates
    there (as ONNX's reference does), the rest is zeros.
    """

    type_name, version, num_inputs = "MaxUnpool", "onnx", (2, 3)
    kernel = Attr("ints")
    strides = Attr("ints", [])
    pads_begin = Attr("ints", [])
    pads_end = Attr("ints", [])

    def default_shape(self, dims: list) -> list:
        n = len(dims) - 2
        kernel, strides, pb, pe = per_axis_attrs(self, n, "kernel", "strides", "pads_begin", "pads_end")
        out = list(dims[:2])
        for i, d in enumerate(dims[2:]):
            if isinstance(d, Dimension) and d.is_dynamic:
                out.append(Dimension())
            else:
                out.append((int(d) - 1) * strides[i] + kernel[i] - pb[i] - pe[i])
        return out

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        data = self.get_input_partial_shape(0)
        if self.has_input(2):
            value = self.const_input(2)
            if value is not None:
                return [(et, PartialShape([int(v) for v in value.reshape(-1)]))]
            n = self.get_input_partial_shape(2)
            rank = n[0] if n.rank.is_static and n[0].is_static else None
            return [(et, PartialShape.dynamic(rank.get_length() if rank is not None else None))]
        if data.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        return [(et, PartialShape(self.default_shape(list(data))))]

    def evaluate(self, inputs: list) -> list:
        x, idx = inputs[0], inputs[1]
        default = self.default_shape(list(x.shape))
        shape = [int(v) for v in inputs[2].reshape(-1)] if len(inputs) > 2 and inputs[2] is not None else default
        if len(shape) != len(default):
            raise ValidationError(f"output_shape {shape} must have rank {len(default)}")
        flat = idx.reshape(-1).astype(np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= int(np.prod(default))):
            raise ValidationError(f"an index is outside the unpooled shape {default}")
        coords = np.unravel_index(flat, default)
        if any(int(c.max(initial=0)) >= s for c, s in zip(coords, shape, strict=True)):
            raise ValidationError(f"output_shape {shape} is too small for the indices (unpooled shape {default})")
        out = np.zeros(shape, dtype=x.dtype)
        out[coords] = x.reshape(-1)
        return [out]
