"""ONNX quantization: Quantize/DequantizeLinear, DynamicQuantizeLinear, and the integer MatMul/Conv family.

``MatMulInteger``/``ConvInteger`` become ``Convert`` to i32, zero-point subtraction and an i32
``MatMul``/``Convolution``; ``QLinearMatMul``/``QLinearConv`` add the float rescale and a
``QuantizeLinear`` back to the output's integer type.
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add, Divide, Multiply, Subtract
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


def _requantize(ctx, acc: Output, scale_in: Output, y_scale: Output, y_zero_point: Output | None) -> Output:
    """``QuantizeLinear(acc * scale_in / y_scale)`` with scale 1 and the output zero point."""
    mult = Divide(scale_in, y_scale).output(0)
    scaled = Multiply(_as_f32(acc), _as_f32(mult)).output(0)
    one = ctx.constant(np.float32(1.0))
    args = [scaled, one] + ([y_zero_point] if y_zero_point is not None else [])
    return QuantizeLinear(*args).output(0)


def _row_scale(ctx, scale: Output, x: Output) -> Output:
    if _rank(scale) == 1 and (_rank(x) or 0) >= 2:
        return Unsqueeze(scale, ctx.constant(np.int64(-1))).output(0)
    return scale


@onnx_op("QLinearMatMul", since=10)
def qlinear_matmul(ctx):
    a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp = (ctx.input(i) for i in range(8))
    acc = MatMul(_centered(ctx, a, a_zp, per_row=True), _centered(ctx, b, b_zp, per_row=False)).output(0)
    scale_in = Multiply(_row_scale(ctx, a_scale, a), b_scale).output(0)
    return _requantize(ctx, acc, scale_in, y_scale, y_zp)


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
    xc = _centered(ctx, x, x_zp, per_row=False)
    wc = Convert(w, destination_type=Type.i32).output(0)
    if w_zp is not None:
        wc = Subtract(wc, _per_channel(ctx, Convert(w_zp, destination_type=Type.i32).output(0), wc)).output(0)
    acc = _conv(ctx, xc, wc)
    if ctx.has_input(8):
        acc = Add(acc, _channel_column(ctx, ctx.input(8), acc)).output(0)
    scale_in = Multiply(x_scale, _channel_column(ctx, w_scale, acc)).output(0)
    return _requantize(ctx, acc, scale_in, y_scale, y_zp)
