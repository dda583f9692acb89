"""ONNX quantization: Quantize/DequantizeLinear, DynamicQuantizeLinear, and the integer MatMul/Conv family.

``MatMulInteger``/``ConvInteger`` become ``Convert`` to i32, zero-point subtraction and an i32
``MatMul``/``Convolution`` (exact integers). ``QLinearMatMul``/``QLinearConv`` become the QDQ form
``DequantizeLinear -> MatMul / Convolution (+ bias) -> QuantizeLinear``, the form the low-precision
transformations run on int8 kernels (OpenVINO's frontend does the same).
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add, Multiply, Subtract
from vinerun.ops.convert import Convert
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.matmul import MatMul
from vinerun.ops.quantization import DequantizeLinear, DynamicQuantizeLinear, QuantizeLinear
from vinerun.ops.reshape import Reshape, Unsqueeze


def _output_type(ctx) -> Type | None:
    code = ctx.attr("output_dtype", 0)
    return Type.from_onnx(code) if code else None


@onnx_op("QuantizeLinear", since=10)
def quantize_linear(ctx):
    args = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if ctx.has_input(2) else [])
    attrs = {"axis": ctx.attr("axis", 1), "block_size": ctx.attr("block_size", 0),
             "saturate": bool(ctx.attr("saturate", 1))}
    out_type = _output_type(ctx)
    if out_type is not None:
        attrs["output_type"] = out_type
    if ctx.attr("precision", 0):
        attrs["precision"] = Type.from_onnx(ctx.attr("precision"))
    return QuantizeLinear(*args, **attrs).output(0)


@onnx_op("DequantizeLinear", since=10)
def dequantize_linear(ctx):
    args = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if ctx.has_input(2) else [])
    attrs = {"axis": ctx.attr("axis", 1), "block_size": ctx.attr("block_size", 0)}
    out_type = _output_type(ctx)
    if out_type is not None:
        attrs["output_type"] = out_type
    return DequantizeLinear(*args, **attrs).output(0)


@onnx_op("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(ctx):
    return DynamicQuantizeLinear(ctx.input(0)).outputs()


def _rank(out: Output) -> int | None:
    ps = out.partial_shape
    return None if ps.rank.is_dynamic else ps.rank.get_length()


def _centered(ctx, x: Output, zero_point: Output | None, per_row: bool) -> Output:
    """``int32(x) - int32(zero_point)``; a 1-D zero point of a matrix's rows becomes a column."""
    xi = Convert(x, destination_type=Type.i32).output(0)
    if zero_point is None:
        return xi
    zi = Convert(zero_point, destination_type=Type.i32).output(0)
    if per_row and _rank(zero_point) == 1 and (_rank(x) or 0) >= 2:
        zi = Unsqueeze(zi, ctx.constant(np.int64(-1))).output(0)
    return Subtract(xi, zi).output(0)


def _as_f32(x: Output) -> Output:
    return x if x.element_type == Type.f32 else Convert(x, destination_type=Type.f32).output(0)


@onnx_op("MatMulInteger", since=10)
def matmul_integer(ctx):
    a = _centered(ctx, ctx.input(0), ctx.optional_input(2), per_row=True)
    b = _centered(ctx, ctx.input(1), ctx.optional_input(3), per_row=False)
    return MatMul(a, b).output(0)


def _axis_of(x: Output, scale: Output, axis_from_end: int) -> int:
    """The axis a 1-D scale of ``x`` runs along (counted from the end), 1 for a per-tensor one."""
    rank = _rank(x)
    return rank - axis_from_end if rank is not None and (_rank(scale) or 0) == 1 else 1


@onnx_op("QLinearMatMul", since=10)
def qlinear_matmul(ctx):
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = (ctx.input(i) for i in range(8))
    da = DequantizeLinear(a, a_scale, a_zp, axis=_axis_of(a, a_scale, 2)).output(0)  # per row of a
    db = DequantizeLinear(b, b_scale, b_zp, axis=_axis_of(b, b_scale, 1)).output(0)  # per column of b
    return QuantizeLinear(MatMul(da, db).output(0), y_scale, y_zp).output(0)


def _conv_attributes(ctx, n: int) -> tuple[dict, int]:
    """Convolution attributes from ONNX's auto_pad/pads/strides/dilations, and the group count."""
    pads = ctx.attr("pads", [0] * (2 * n))
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    attrs = {"strides": ctx.attr("strides", [1] * n), "dilations": ctx.attr("dilations", [1] * n),
             "pads_begin": pads[:n], "pads_end": pads[n:],
             "auto_pad": "explicit" if auto_pad == "NOTSET" else auto_pad.lower()}
    return attrs, ctx.attr("group", 1)


def _conv(ctx, x: Output, w: Output) -> Output:
    """Integer Convolution with the ONNX Conv attributes (auto_pad, pads, strides, dilations, group)."""
    attrs, group = _conv_attributes(ctx, (_rank(x) or _rank(w) or 4) - 2)
    if group == 1:
        return Convolution(x, w, **attrs).output(0)
    ws = w.partial_shape
    if ws.rank.is_dynamic or not ws[0].is_static:
        raise ctx.unsupported("grouped integer convolution needs filters of static shape")
    shape = [group, ws[0].get_length() // group] + [-1 if d.is_dynamic else d.get_length() for d in list(ws)[1:]]
    wg = Reshape(w, ctx.constant(np.asarray(shape, np.int64)), special_zero=False).output(0)
    return GroupConvolution(x, wg, **attrs).output(0)


@onnx_op("ConvInteger", since=10)
def conv_integer(ctx):
    x = _centered(ctx, ctx.input(0), ctx.optional_input(2), per_row=False)
    w_zp = ctx.optional_input(3)
    w = Convert(ctx.input(1), destination_type=Type.i32).output(0)
    if w_zp is not None:
        w = Subtract(w, _per_channel(ctx, Convert(w_zp, destination_type=Type.i32).output(0), w)).output(0)
    return _conv(ctx, x, w)


def _per_channel(ctx, param: Output, w: Output) -> Output:
    """A 1-D per-output-channel parameter reshaped to broadcast over ``[C_out, C_in, *K]``."""
    r = _rank(w)
    if _rank(param) == 1 and r is not None:
        return Reshape(param, ctx.constant(np.asarray([-1] + [1] * (r - 1), np.int64)), special_zero=False).output(0)
    return param


def _channel_column(ctx, param: Output, y: Output) -> Output:
    """A 1-D per-channel parameter reshaped to broadcast over ``[N, C, *S]`` (``[C, 1, ...]``)."""
    r = _rank(y)
    if _rank(param) == 1 and r is not None:
        return Reshape(param, ctx.constant(np.asarray([-1] + [1] * (r - 2), np.int64)), special_zero=False).output(0)
    return param


@onnx_op("QLinearConv", since=10)
def qlinear_conv(ctx):
    x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp = (ctx.optional_input(i) for i in range(8))
    dx = DequantizeLinear(*[v for v in (x, x_scale, x_zp) if v is not None]).output(0)
    dw = DequantizeLinear(*[v for v in (w, w_scale, w_zp) if v is not None], axis=0).output(0)
    y = _conv(ctx, dx, dw)
    if ctx.has_input(8):  # int32 bias in units of x_scale * w_scale
        bias = Multiply(_as_f32(ctx.input(8)), Multiply(x_scale, w_scale).output(0)).output(0)
        y = Add(y, _channel_column(ctx, bias, y)).output(0)
    return QuantizeLinear(*[v for v in (y, y_scale, y_zp) if v is not None]).output(0)
