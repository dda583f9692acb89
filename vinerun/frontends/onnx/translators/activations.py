"""ONNX activations: Relu, Sigmoid, Tanh, Elu, Selu, LeakyRelu, PRelu, HardSigmoid, HardSwish, Softplus,
Softsign, ThresholdedRelu, Celu, Gelu, Mish, Swish, Shrink and Clip."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.frontends.onnx.translators._util import scalar_like
from vinerun.ops import activations as act
from vinerun.ops.arithmetic import Add, Divide, Maximum, Minimum, Multiply, Subtract
from vinerun.ops.comparison import Greater, Less
from vinerun.ops.logical import Select

_SIMPLE = {"Relu": act.Relu, "Sigmoid": act.Sigmoid, "Tanh": act.Tanh, "Softplus": act.SoftPlus,
           "Softsign": act.SoftSign, "HardSwish": act.HSwish, "Mish": act.Mish}


def _register(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        return cls(ctx.input(0)).output(0)


for _name, _cls in _SIMPLE.items():
    _register(_name, _cls)


@onnx_op("Elu")
def elu(ctx):
    return act.Elu(ctx.input(0), alpha=ctx.attr("alpha", 1.0)).output(0)


@onnx_op("Selu")
def selu(ctx):
    x = ctx.input(0)
    alpha = ctx.attr("alpha", 1.67326319217681884765625)
    gamma = ctx.attr("gamma", 1.05070102214813232421875)
    return act.Selu(x, scalar_like(alpha, x), scalar_like(gamma, x)).output(0)


@onnx_op("LeakyRelu")
def leaky_relu(ctx):
    x = ctx.input(0)
    return act.PRelu(x, scalar_like(ctx.attr("alpha", 0.01), x)).output(0)


@onnx_op("PRelu")
def prelu(ctx):
    return act.PRelu(ctx.input(0), ctx.input(1)).output(0)


@onnx_op("HardSigmoid")
def hard_sigmoid(ctx):
    x = ctx.input(0)
    alpha, beta = ctx.attr("alpha", 0.2), ctx.attr("beta", 0.5)
    return act.HardSigmoid(x, scalar_like(alpha, x), scalar_like(beta, x)).output(0)


@onnx_op("ThresholdedRelu")
def thresholded_relu(ctx):
    x = ctx.input(0)
    keep = Greater(x, scalar_like(ctx.attr("alpha", 1.0), x))
    return Select(keep, x, scalar_like(0, x)).output(0)


@onnx_op("Celu")
def celu(ctx):
    """celu(x) = alpha * elu(x / alpha) with elu's alpha = 1."""
    x = ctx.input(0)
    alpha = scalar_like(ctx.attr("alpha", 1.0), x)
    return Multiply(act.Elu(Divide(x, alpha), alpha=1.0), alpha).output(0)


@onnx_op("Gelu")
def gelu(ctx):
    mode = ctx.attr("approximate", "none")
    if mode not in ("none", "tanh"):
        raise ctx.unsupported(f"approximate={mode!r} (expected 'none' or 'tanh')")
    return act.Gelu(ctx.input(0), approximation_mode="TANH" if mode == "tanh" else "ERF").output(0)


@onnx_op("Swish")
def swish(ctx):
    x = ctx.input(0)
    return act.Swish(x, scalar_like(ctx.attr("alpha", 1.0), x)).output(0)


@onnx_op("Shrink")
def shrink(ctx):
    """x - bias where x > lambd, x + bias where x < -lambd, else 0."""
    x = ctx.input(0)
    lambd, bias = ctx.attr("lambd", 0.5), ctx.attr("bias", 0.0)
    above = Select(Greater(x, scalar_like(lambd, x)), Subtract(x, scalar_like(bias, x)), scalar_like(0, x))
    return Select(Less(x, scalar_like(-lambd, x)), Add(x, scalar_like(bias, x)), above).output(0)


@onnx_op("Clip")
def clip_v1(ctx):
    lo = ctx.attr("min", float(np.finfo(np.float32).min))
    hi = ctx.attr("max", float(np.finfo(np.float32).max))
    return act.Clamp(ctx.input(0), min=lo, max=hi).output(0)


@onnx_op("Clip", since=11)
def clip(ctx):
    """Bounds are optional inputs: constant ones make a Clamp, others Maximum / Minimum."""
    x = ctx.input(0)
    lo, hi = ctx.optional_input(1), ctx.optional_input(2)
    lo_v, hi_v = ctx.const_value(1), ctx.const_value(2)
    if (lo is None or lo_v is not None) and (hi is None or hi_v is not None):
        bounds = [None if v is None else np.asarray(v).reshape(-1)[0].item() for v in (lo_v, hi_v)]
        return act.Clamp(x, min=-np.inf if lo is None else bounds[0], max=np.inf if hi is None else bounds[1]).output(0)
    out = x
    if lo is not None:
        out = Maximum(out, lo).output(0)
    if hi is not None:
        out = Minimum(out, hi).output(0)
    return out
