"""ai.onnx.preview.training optimizers -> vinerun.ops.training."""

from __future__ import annotations

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops.training import Adagrad, Adam, Momentum

TRAINING = "ai.onnx.preview.training"


@onnx_op("Adagrad", domain=TRAINING)
def adagrad(ctx):
    return Adagrad(*ctx.inputs, decay_factor=ctx.attr("decay_factor", 0.0), epsilon=ctx.attr("epsilon", 0.0),
                   norm_coefficient=ctx.attr("norm_coefficient", 0.0)).outputs()


@onnx_op("Momentum", domain=TRAINING)
def momentum(ctx):
    return Momentum(*ctx.inputs, alpha=ctx.attr("alpha"), beta=ctx.attr("beta"), mode=ctx.attr("mode"),
                    norm_coefficient=ctx.attr("norm_coefficient")).outputs()


@onnx_op("Adam", domain=TRAINING)
def adam(ctx):
    return Adam(*ctx.inputs, alpha=ctx.attr("alpha", 0.9), beta=ctx.attr("beta", 0.999),
                epsilon=ctx.attr("epsilon", 1e-6), norm_coefficient=ctx.attr("norm_coefficient", 0.0),
                norm_coefficient_post=ctx.attr("norm_coefficient_post", 0.0)).outputs()
