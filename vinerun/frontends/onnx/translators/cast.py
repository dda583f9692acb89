"""ONNX Cast, CastLike and BitCast."""

from __future__ import annotations

import onnx
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.types import Type
from vinerun.ops.convert import BitCast, Cast, Convert, ConvertLike


def _target_type(ctx) -> Type:
    to = ctx.attr("to")
    if isinstance(to, str):  # opset 1-5 name the type ("FLOAT")
        to = onnx.TensorProto.DataType.Value(to.upper())
    try:
        return Type.from_onnx(int(to))
    except TypeError as e:
        raise ctx.unsupported(str(e)) from None


def _options(ctx) -> tuple[bool, str]:
    return bool(ctx.attr("saturate", 1)), ctx.attr("round_mode", "up")


@onnx_op("Cast")
def cast(ctx):
    target = _target_type(ctx)
    saturate, round_mode = _options(ctx)
    if saturate and round_mode == "up":
        return Convert(ctx.input(0), destination_type=target).output(0)
    return Cast(ctx.input(0), destination_type=target, saturate=saturate, round_mode=round_mode).output(0)


@onnx_op("CastLike")
def cast_like(ctx):
    saturate, round_mode = _options(ctx)
    like = ctx.input(1)
    if saturate and round_mode == "up":
        return ConvertLike(ctx.input(0), like).output(0)
    if like.element_type.is_dynamic():
        raise ctx.unsupported("CastLike with saturate=0 or a round_mode needs the target type known")
    return Cast(ctx.input(0), destination_type=like.element_type, saturate=saturate,
                round_mode=round_mode).output(0)


@onnx_op("BitCast")
def bit_cast(ctx):
    return BitCast(ctx.input(0), destination_type=_target_type(ctx)).output(0)
