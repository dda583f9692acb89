"""ONNX random ops -> vinerun.ops.random. ImageDecoder is reported as unsupported (no image codec)."""

from __future__ import annotations

import numpy as np

import onnx
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.types import Type
from vinerun.ops.random import Bernoulli, Multinomial, RandomNormal, RandomNormalLike, RandomUniform, RandomUniformLike


def _dtype(ctx, default: Type = Type.dynamic) -> Type:
    code = ctx.attr("dtype", None)
    return default if code is None else Type.from_onnx(code)


@onnx_op("RandomUniform")
def random_uniform(ctx):
    et = _dtype(ctx, Type.f32)
    seed = ctx.attr("seed", None)
    # OpenVINO's RandomUniform treats seeds (0, 0) as "unseeded"; op_seed=1 keeps an ONNX seed of 0 fixed.
    seeds = {} if seed is None else {"global_seed": int(np.float64(seed).view(np.int64) & 0x7FFFFFFF), "op_seed": 1}
    shape = ctx.constant(np.array(ctx.attr("shape"), np.int64))
    lo = ctx.constant(np.array(ctx.attr("low", 0.0), et.to_dtype()))
    hi = ctx.constant(np.array(ctx.attr("high", 1.0), et.to_dtype()))
    return RandomUniform(shape, lo, hi, output_type=et, **seeds).output(0)


@onnx_op("RandomUniformLike")
def random_uniform_like(ctx):
    return RandomUniformLike(ctx.input(0), dtype=_dtype(ctx), low=ctx.attr("low", 0.0), high=ctx.attr("high", 1.0),
                             seed=ctx.attr("seed", None)).output(0)


@onnx_op("RandomNormal")
def random_normal(ctx):
    return RandomNormal(shape=ctx.attr("shape"), dtype=_dtype(ctx, Type.f32), mean=ctx.attr("mean", 0.0),
                        scale=ctx.attr("scale", 1.0), seed=ctx.attr("seed", None)).output(0)


@onnx_op("RandomNormalLike")
def random_normal_like(ctx):
    return RandomNormalLike(ctx.input(0), dtype=_dtype(ctx), mean=ctx.attr("mean", 0.0),
                            scale=ctx.attr("scale", 1.0), seed=ctx.attr("seed", None)).output(0)


@onnx_op("Bernoulli", since=15)
def bernoulli(ctx):
    return Bernoulli(ctx.input(0), dtype=_dtype(ctx), seed=ctx.attr("seed", None)).output(0)


@onnx_op("Multinomial", since=7)
def multinomial(ctx):
    return Multinomial(ctx.input(0), dtype=_dtype(ctx, Type.from_onnx(onnx.TensorProto.INT32)),
                       sample_size=ctx.attr("sample_size", 1), seed=ctx.attr("seed", None)).output(0)


@onnx_op("ImageDecoder", since=20)
def image_decoder(ctx):
    raise ctx.unsupported("decoding images needs an image codec library, which vinerun does not depend on")
