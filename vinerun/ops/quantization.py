"""ONNX linear quantization (version "onnx"): QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.

Scales and zero points are per tensor (scalars), per axis (1-D along ``axis``) or blocked (the
input's shape with ``axis`` divided by ``block_size``, rounded up). Integer targets round half to
even and saturate; float8/float4 targets convert (saturating unless ``saturate`` is false).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import normalize_axis
from vinerun.ops.convert import convert_array

_SMALL_INTS = {np.dtype(t) for t in (ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.int4, ml_dtypes.uint4)}


def is_integer_dtype(dtype: np.dtype) -> bool:
    return np.dtype(dtype).kind in "iu" or np.dtype(dtype) in _SMALL_INTS


def integer_range(dtype: np.dtype) -> tuple[int, int]:
    dtype = np.dtype(dtype)
    info = ml_dtypes.iinfo(dtype) if dtype in _SMALL_INTS else np.iinfo(dtype)
    return int(info.min), int(info.max)


def expand_param(p: np.ndarray, x_shape: tuple[int, ...], axis: int, block_size: int) -> np.ndarray:
    """Broadcast a scale or zero point to ``x_shape`` (per tensor, per axis or blocked)."""
    p = np.asarray(p)
    if p.ndim == 0 or p.size == 1 and block_size == 0:
        return p.reshape(())
    rank = len(x_shape)
    axis = normalize_axis(axis, rank)
    if block_size <= 0:
        if p.ndim != 1 or p.shape[0] != x_shape[axis]:
            raise ValidationError(f"per-axis parameter of shape {list(p.shape)} does not match axis {axis} "
                                  f"of input {list(x_shape)}")
        shape = [1] * rank
        shape[axis] = p.shape[0]
        return p.reshape(shape)
    if p.ndim != rank:
        raise ValidationError(f"blocked parameter of shape {list(p.shape)} must have the input's rank {rank}")
    want = [(d + block_size - 1) // block_size if i == axis else d for i, d in enumerate(x_shape)]
    if list(p.shape) != want:
        raise ValidationError(f"blocked parameter of shape {list(p.shape)} does not fit input {list(x_shape)} "
                              f"with block_size {block_size} on axis {axis} (expected {want})")
    return np.repeat(p, block_size, axis=axis).take(np.arange(x_shape[axis]), axis=axis)


def quantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, dtype: np.dtype,
             saturate: bool = True, precision: np.dtype | None = None) -> np.ndarray:
    """``saturate(round(x / scale) + zero_point)`` for integers; ``convert(x / scale)`` for floats.

    The division runs in ``precision`` (default: the scale's type).
    """
    dtype = np.dtype(dtype)
    p = np.dtype(precision) if precision is not None else scale.dtype
    scaled = np.divide(x.astype(p), scale.astype(p))
    if is_integer_dtype(dtype):
        q = np.rint(scaled.astype(np.float64))
        if zero_point is not None:
            q = q + zero_point.astype(np.float64)
        lo, hi = integer_range(dtype)
        return np.clip(q, lo, hi).astype(dtype)
    y = scaled.astype(np.float32)
    if zero_point is not None:
        y = y + zero_point.astype(np.float32)
    if saturate and dtype.name.startswith("float4"):
        big = float(ml_dtypes.finfo(dtype).max)
        y = np.where(np.isnan(y), y, np.clip(y, -big, big))
    return convert_array(y, dtype, saturate=saturate)


def dequantize(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, dtype: np.dtype) -> np.ndarray:
    """``(x - zero_point) * scale`` computed in float32, returned as ``dtype``."""
    xf = x.astype(np.float32)
    if zero_point is not None:
        xf = xf - zero_point.astype(np.float32)
    return (xf * scale.astype(np.float32)).astype(dtype)


def zero_point(inputs: list) -> np.ndarray | None:
    """The optional zero point (input 2)."""
    return inputs[2] if len(inputs) > 2 else None


class LinearQuantization(Node):
    """Shared by QuantizeLinear and DequantizeLinear: ``(x, scale[, zero_point])``, ``axis`` and ``block_size``."""

    num_inputs = (2, 3)
    axis = Attr("int", 1)
    block_size = Attr("int", 0)

    def check_params(self, data_type: Type) -> None:
        """Compile-time checks of the scale and zero point against the data (input 0): shapes that fit the
        per-tensor / per-axis / blocked form, a zero point of the data's integer type (``data_type``)."""
        x, scale = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        one_value = scale.is_static and int(np.prod(list(scale.to_shape()))) == 1  # per tensor, also as [1]
        if self.block_size == 0 and scale.rank.is_static and x.rank.is_static and scale.rank.get_length() > 0 \
                and not one_value:
            rank = x.rank.get_length()
            if scale.rank.get_length() != 1:
                raise ValidationError(f"the scale must be a scalar or 1-D along axis {self.axis}, got shape {scale}")
            axis = normalize_axis(self.axis, rank) if rank else 0
            dim, count = (x[axis] if rank else None), scale[0]
            known = dim is not None and dim.is_static and count.is_static
            if known and count.get_length() not in (1, dim.get_length()):
                raise ValidationError(f"the scale has {count.get_length()} values but axis {axis} of the input "
                                      f"{x} has {dim.get_length()}")
        if self.get_input_size() > 2 and self.input_value(2) is not None:
            zp, zp_type = self.get_input_partial_shape(2), self.get_input_element_type(2)
            zs, ss = (list(zp.to_shape()), list(scale.to_shape())) if zp.is_static and scale.is_static else ([], [])
            if zs != ss and (int(np.prod(zs)) > 1 or int(np.prod(ss)) > 1):
                raise ValidationError(f"the zero point's shape {zp} differs from the scale's {scale}")
            if data_type.is_static() and zp_type.is_static() and zp_type != data_type:
                raise ValidationError(f"the zero point is {zp_type.get_type_name()} but the quantized data is "
                                      f"{data_type.get_type_name()}")
        scale_value = self.const_input(1)
        if scale_value is not None and self.type_name == "QuantizeLinear" and np.asarray(scale_value).dtype.kind == "f":
            v = np.asarray(scale_value, np.float64)
            if not np.all(np.isfinite(v)) or np.any(v == 0):
                raise ValidationError(f"the scale must be finite and non-zero, got {v.reshape(-1)[:4].tolist()}")

    def broadcast_params(self, inputs: list) -> tuple[np.ndarray, np.ndarray | None]:
        """The scale (input 1) and the zero point (input 2, if given) broadcast to the shape of ``x`` (input 0)."""
        shape, zp = inputs[0].shape, zero_point(inputs)
        s = expand_param(inputs[1], shape, self.axis, self.block_size)
        z = expand_param(zp, shape, self.axis, self.block_size) if zp is not None else None
        return s, z


@register_op
class QuantizeLinear(LinearQuantization):
    """``(x, y_scale[, y_zero_point])`` -> quantized ``y``; its type is the zero point's, else ``output_type``."""

    type_name, version = "QuantizeLinear", "onnx"
    output_type = Attr("type", Type.u8)
    saturate = Attr("bool", True)
    precision = Attr("type", Type.dynamic)  # of x / y_scale; dynamic: the scale's type

    def infer(self) -> list:
        et = self.get_input_element_type(2) if self.get_input_size() > 2 else self.output_type
        if not et.is_static():
            et = self.output_type
        self.check_params(et)
        return [(et, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        zp = zero_point(inputs)
        dtype = zp.dtype if zp is not None else self.output_type.to_dtype()
        s, z = self.broadcast_params(inputs)
        precision = self.precision.to_dtype() if self.precision.is_static() else None
        return [np.asarray(quantize(inputs[0], s, z, dtype, self.saturate, precision))]


@register_op
class DequantizeLinear(LinearQuantization):
    """``(x, x_scale[, x_zero_point])`` -> ``(x - zero_point) * scale`` of the scale's type (or ``output_type``)."""

    type_name, version = "DequantizeLinear", "onnx"
    output_type = Attr("type", Type.dynamic)

    def infer(self) -> list:
        et = self.output_type if self.output_type.is_static() else self.get_input_element_type(1)
        self.check_params(self.get_input_element_type(0))
        return [(et, self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        dtype = self.output_type.to_dtype() if self.output_type.is_static() else inputs[1].dtype
        s, z = self.broadcast_params(inputs)
        return [np.asarray(dequantize(inputs[0], s, z, dtype))]


def dynamic_quantization_params(x: np.ndarray) -> tuple[np.float32, np.uint8]:
    """uint8 scale and zero point covering ``[min(x, 0), max(x, 0)]``."""
    lo = min(float(np.min(x)), 0.0) if x.size else 0.0
    hi = max(float(np.max(x)), 0.0) if x.size else 0.0
    scale = np.float32((np.float32(hi) - np.float32(lo)) / np.float32(255))
    if scale == 0:
        return scale, np.uint8(0)
    zp = np.clip(np.rint(np.float32(0) - np.float32(lo) / scale), 0, 255)
    return scale, np.uint8(zp)


@register_op
class DynamicQuantizeLinear(Node):
    """``x`` -> ``(y: u8, y_scale: f32 scalar, y_zero_point: u8 scalar)`` from x's range (including 0)."""

    type_name, version, num_inputs = "DynamicQuantizeLinear", "onnx", (1, 1)
    num_outputs = 3

    def infer(self) -> list:
        return [(Type.u8, self.get_input_partial_shape(0)), (Type.f32, PartialShape([])),
                (Type.u8, PartialShape([]))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0].astype(np.float32)
        scale, zp = dynamic_quantization_params(x)
        y = quantize(x, np.asarray(scale if scale != 0 else np.float32(1)), np.asarray(zp), np.dtype(np.uint8))
        return [y, np.asarray(scale, np.float32), np.asarray(zp, np.uint8)]
