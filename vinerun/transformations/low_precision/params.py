"""Quantization parameters read off a graph: per-tensor activation parameters of QuantizeLinear /
DequantizeLinear, and int8 weights with per-output-channel scales from the weight dequantization forms
exporters write (see :mod:`vinerun.transformations.decompression`).

>>> q = Quantization(0.5, 128, np.dtype(np.uint8))
>>> q.quantize(np.array([-1.0, 0.0, 1.0])).tolist(), q.dequantize(np.array([126, 128, 130], np.uint8)).tolist()
([126, 128, 130], [-1.0, 0.0, 1.0])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output

#: rt_info key of a QuantizeLinear / DequantizeLinear made from a FakeQuantize: its (low, high) input limits
FAKE_QUANTIZE_RANGE = "fake_quantize_range"
#: integer types an activation is quantized to here (oneDNN's int8 sources and destinations)
ACTIVATION_TYPES = (np.dtype(np.uint8), np.dtype(np.int8))


@dataclass(frozen=True)
class Quantization:
    """A per-tensor affine quantization: ``real = (q - zero_point) * scale``, ``q`` of ``dtype`` (u8 / i8)."""

    scale: float
    zero_point: int
    dtype: np.dtype
    #: the (low, high) input limits of the FakeQuantize this came from (f32), None for a QuantizeLinear: openvino
    #: computes with those, and the int8 epilogue repeats its arithmetic (see :meth:`fake_quantize_scale`)
    fake_quantize_range: tuple[float, float] | None = field(default=None, compare=False)

    @property
    def limits(self) -> tuple[int, int]:
        info = np.iinfo(self.dtype)
        return int(info.min), int(info.max)

    def fake_quantize_limits(self) -> tuple[np.float32, np.float32]:
        """The (low, high) input limits of openvino's FakeQuantize in f32: the original one's, else this grid's
        real range."""
        f32 = np.float32
        if self.fake_quantize_range is not None:
            low, high = (f32(v) for v in self.fake_quantize_range)
            return low, high
        low, high = (f32(f32(limit - self.zero_point) * f32(self.scale)) for limit in self.limits)
        return low, high

    def fake_quantize_scale(self, unit: float = 1.0) -> np.float32:
        """openvino's FakeQuantize input scale ``(levels - 1) / (high - low)`` in f32, its limits first divided
        by ``unit`` (openvino's low-precision transformations fold a dequantization multiply by ``unit`` into
        the FakeQuantize after it so)."""
        f32 = np.float32
        low, high = self.fake_quantize_limits()
        if unit != 1.0:
            low, high = f32(low / f32(unit)), f32(high / f32(unit))
        lo, hi = self.limits
        return f32(f32(hi - lo) / f32(high - low))

    def quantize(self, x: np.ndarray) -> np.ndarray:
        """Round half to even and saturate, as QuantizeLinear."""
        lo, hi = self.limits
        q = np.rint(np.asarray(x, np.float32) / np.float32(self.scale)) + self.zero_point
        return np.clip(q, lo, hi).astype(self.dtype)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        return ((np.asarray(q, np.float32) - np.float32(self.zero_point)) * np.float32(self.scale)).astype(np.float32)

    def real_range(self) -> tuple[float, float]:
        """The real values the integer range covers."""
        lo, hi = self.limits
        return (lo - self.zero_point) * self.scale, (hi - self.zero_point) * self.scale


@dataclass(frozen=True, eq=False)
class ChannelQuantization:
    """A per-channel (axis 1) affine quantization of an activation: ``real = (q - zero_points[c]) * scales[c]``
    (NNCF quantizes a depthwise convolution's input so)."""

    scales: np.ndarray  # f32 [channels]
    zero_points: np.ndarray  # i32 [channels]
    dtype: np.dtype

    @staticmethod
    def of(scales: np.ndarray, zero_points: np.ndarray, dtype: np.dtype) -> ChannelQuantization:
        s, z = np.asarray(scales, np.float32).reshape(-1), np.asarray(zero_points, np.int32).reshape(-1)
        return ChannelQuantization(s, z, np.dtype(dtype))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChannelQuantization) and self.dtype == other.dtype and \
            np.array_equal(self.scales, other.scales) and np.array_equal(self.zero_points, other.zero_points)

    __hash__ = None  # type: ignore[assignment] - compared by value, not hashed

    @property
    def common_zero_point(self) -> int | None:
        """The zero point every channel shares, or None."""
        z = self.zero_points
        return int(z[0]) if np.all(z == z[0]) else None

    @property
    def limits(self) -> tuple[int, int]:
        info = np.iinfo(self.dtype)
        return int(info.min), int(info.max)

    def _column(self, v: np.ndarray, rank: int) -> np.ndarray:
        return v.reshape([1, -1] + [1] * (rank - 2))

    def quantize(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        lo, hi = self.limits
        q = np.rint(x / self._column(self.scales, x.ndim)) + self._column(self.zero_points, x.ndim)
        return np.clip(q, lo, hi).astype(self.dtype)

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        rank = np.ndim(q)
        return ((np.asarray(q, np.float32) - self._column(self.zero_points, rank)) *
                self._column(self.scales, rank)).astype(np.float32)


def channel_params(node: Node) -> ChannelQuantization | None:
    """The per-channel (axis 1) parameters of a QuantizeLinear / DequantizeLinear of u8 / i8 data, else None."""
    if node.type_name not in ("QuantizeLinear", "DequantizeLinear") or node.block_size:  # type: ignore[attr-defined]
        return None
    data = node.output(0) if node.type_name == "QuantizeLinear" else node.input_value(0)
    rank = data.partial_shape.rank
    dtype = np.dtype(data.element_type.to_dtype()) if data.element_type.is_static() else None
    if dtype not in ACTIVATION_TYPES or rank.is_dynamic or rank.get_length() < 2 or \
            node.axis % rank.get_length() != 1:  # type: ignore[attr-defined]
        return None
    scale = constant_value(node.input_value(1))
    zp = constant_value(node.input_value(2)) if node.get_input_size() > 2 else np.zeros(1, dtype)
    if scale is None or zp is None or scale.ndim != 1 or scale.size < 2 or not np.all(scale > 0):
        return None
    return ChannelQuantization.of(scale, np.broadcast_to(zp.reshape(-1), scale.shape), dtype)


GRID_TOLERANCE = 1e-3  # of a step: how far a FakeQuantize range's low end may sit off the integer grid


def fake_quantize_grid(fq: Node) -> tuple[np.ndarray, np.ndarray] | None:
    """(scales, zero points), as float64 arrays of the limits' shape, of a FakeQuantize whose constant limits
    have (nearly) equal input and output ranges on an integer grid: the low end a whole number of steps below
    0, that number (the zero point) within ``[0, levels - 1]``. None otherwise."""
    limits = [constant_value(fq.input_value(i)) for i in range(1, 5)]
    if any(v is None for v in limits):
        return None
    low, high, out_low, out_high = (np.asarray(v, np.float64) for v in limits)  # type: ignore[arg-type]
    if low.shape != out_low.shape or not (np.allclose(low, out_low) and np.allclose(high, out_high)):
        return None
    levels = fq.levels  # type: ignore[attr-defined]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # in f32 as openvino computes it (its FakeQuantize's output scale), so both round to the same grid
        scale = ((out_high.astype(np.float32) - out_low.astype(np.float32)) / np.float32(levels - 1)).astype(np.float64)
        zp = -low / scale  # the integer that real 0 maps to, counted from the low end
    if np.any(scale <= 0) or not np.all(np.isfinite(scale)) or np.any(np.abs(zp - np.rint(zp)) > GRID_TOLERANCE):
        return None
    zp = np.rint(zp)
    if np.any(zp < 0) or np.any(zp > levels - 1):
        return None
    return scale, zp


def fake_quantize_shift(shift: np.float32, span: np.float32) -> np.float32:
    """A FakeQuantize's input shift as openvino's CPU plugin applies it: dropped when under 1e-5 of the range
    ``span`` it maps to (a symmetric s8 grid's ``127.99999 - 128``)."""
    return np.float32(0.0) if abs(shift) < span * np.float32(1e-5) else np.float32(shift)


def constant_value(value: Output) -> np.ndarray | None:
    """The value of a Constant (or a Convert of one), else None."""
    node = value.node
    if isinstance(node, Constant):
        return node.get_value()
    if node.type_name == "Convert" and isinstance(node.input_value(0).node, Constant):
        return node.input_value(0).node.get_value().astype(node.get_output_element_type(0).to_dtype())
    return None


def _scalar(value: Output | None) -> float | None:
    if value is None:
        return 0.0
    v = constant_value(value)
    if v is None or v.size != 1:
        return None
    return float(np.asarray(v).reshape(-1)[0])


def activation_params(node: Node) -> Quantization | None:
    """The per-tensor parameters of a QuantizeLinear / DequantizeLinear whose data is u8 / i8, else None
    (per-axis or blocked parameters, another integer type, a scale that is not a positive constant)."""
    if node.type_name not in ("QuantizeLinear", "DequantizeLinear") or node.block_size:  # type: ignore[attr-defined]
        return None
    data = node.output(0) if node.type_name == "QuantizeLinear" else node.input_value(0)
    dtype = np.dtype(data.element_type.to_dtype()) if data.element_type.is_static() else None
    if dtype not in ACTIVATION_TYPES:
        return None
    scale = _scalar(node.input_value(1))
    zp = _scalar(node.input_value(2) if node.get_input_size() > 2 else None)
    if scale is None or zp is None or not scale > 0 or not np.isfinite(scale):
        return None
    return Quantization(scale, int(zp), dtype, node.rt_info.get(FAKE_QUANTIZE_RANGE))


@dataclass(frozen=True)
class Weights:
    """Constant int8 weights and their real scale per output channel: ``real = values * scales[channel]``."""

    values: np.ndarray  # int8, in the layout the consumer reads
    scales: np.ndarray  # f32 [output channels]


def _per_channel(param: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """``param`` (a scalar, a vector along ``axis`` or an array broadcasting along it alone) as a vector of
    ``shape[axis]`` values, or None when it varies along another axis."""
    p = np.asarray(param)
    count = shape[axis]
    if p.size == 1:
        return np.full(count, p.reshape(-1)[0])
    if p.ndim == 1 and p.size == count:
        return p
    if p.ndim > len(shape):
        return None
    full = (1,) * (len(shape) - p.ndim) + p.shape
    if any(d != 1 for i, d in enumerate(full) if i != axis) or full[axis] != count:
        return None
    return p.reshape(-1)


def _centered(q: np.ndarray, zp: np.ndarray | None, axis: int) -> np.ndarray | None:
    """``q - zero_point`` as int8 (the zero point broadcast along ``axis``), or None when it leaves [-128, 127]."""
    v = q.astype(np.int16)
    if zp is not None:
        z = _per_channel(zp, q.shape, axis)
        if z is None:
            return None
        v = v - np.asarray(z, np.int16).reshape([-1 if i == axis else 1 for i in range(q.ndim)])
    if v.min(initial=0) < -128 or v.max(initial=0) > 127:
        return None
    return v.astype(np.int8)


def _dequantized(value: Output, axis: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(int8 values, per-channel scales) of a weight dequantization subgraph ending at ``value``."""
    node = value.node
    t = node.type_name
    if t == "DequantizeLinear":
        source = node.input_value(0)
        if not isinstance(source.node, Constant) or node.block_size:  # type: ignore[attr-defined]
            return None
        q = source.node.get_value()
        if q.dtype not in (np.int8, np.uint8) or q.ndim == 0:
            return None
        scale, zp = constant_value(node.input_value(1)), None
        if node.get_input_size() > 2:
            zp = constant_value(node.input_value(2))
        if scale is None or (node.get_input_size() > 2 and zp is None):
            return None
        own_axis = node.axis % q.ndim  # type: ignore[attr-defined]
        if np.asarray(scale).size > 1 and own_axis != axis:
            return None
        scales = _per_channel(scale, q.shape, axis)
        values = _centered(q, zp, axis)
        return None if scales is None or values is None else (values, scales.astype(np.float32))
    if t == "Multiply":  # Convert(q) [- zero point] times a scale (OpenVINO IR, NNCF's compressed weights)
        scale = constant_value(node.input_value(1))
        inner = node.input_value(0).node
        zp = None
        if inner.type_name == "Subtract":
            zp = constant_value(inner.input_value(1))
            if zp is None:
                return None
            inner = inner.input_value(0).node
        if scale is None or inner.type_name != "Convert" or not isinstance(inner.input_value(0).node, Constant):
            return None
        q = inner.input_value(0).node.get_value()
        if q.dtype not in (np.int8, np.uint8) or q.ndim == 0:
            return None
        scales = _per_channel(scale, q.shape, axis)
        values = _centered(q, None if zp is None else np.rint(zp).astype(np.int16), axis)
        if zp is not None and not np.allclose(zp, np.rint(zp)):
            return None
        return None if scales is None or values is None else (values, scales.astype(np.float32))
    return None


def weight_params(value: Output, axis: int) -> Weights | None:
    """Int8 weights with a scale per channel along ``axis`` (the consumer's output channels) of the constant
    weight dequantization ending at ``value``: ``DequantizeLinear`` of an i8 / u8 constant, or ``Convert ->
    [Subtract] -> Multiply``, either maybe followed by a constant ``Reshape`` (grouped filters); u8 weights and
    zero points are taken when ``q - zero_point`` fits in int8. None otherwise."""
    node = value.node
    if node.type_name == "Reshape":
        shape = constant_value(node.input_value(1))
        inner_axis = 0 if axis == 0 else None
        if shape is None or inner_axis is None:
            return None
        found = _dequantized(node.input_value(0), 0)
        if found is None:
            return None
        values, scales = found
        out_shape = tuple(int(d) for d in value.partial_shape.to_shape()) if value.partial_shape.is_static else None
        if out_shape is None or int(np.prod(out_shape)) != values.size:
            return None
        # [O, I, *K] -> [G, O / G, I / G, *K]: output channels stay the leading O = G * O / G elements
        return Weights(values.reshape(out_shape), scales)
    found = _dequantized(value, axis)
    return None if found is None else Weights(*found)
