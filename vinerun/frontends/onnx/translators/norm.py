"""ONNX normalizations -> BatchNormInference, MVN (+ Multiply/Add), GroupNormalization, LRN, NormalizeL2.

LayerNormalization asked for its Mean/InvStdDev outputs, RMSNormalization and BatchNormalization in
training mode become ONNX-only ops. GroupNormalization before opset 21 (per-group scale) expands from
its ONNX function body.
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.frontends.onnx.translators.conv import per_channel
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output
from vinerun.ir.registry import get_op_class
from vinerun.ops._base import normalize_axis
from vinerun.ops.arithmetic import Add, Divide, Maximum, Multiply
from vinerun.ops.normalization import LRN, MVN, BatchNormInference, GroupNormalization, NormalizeL2
from vinerun.ops.normalization_onnx import BatchNormalization, LayerNormalization, RMSNormalization

_TINY = 1e-15  # a norm floor far below any float32 norm of interest; its square is still a normal f32


def axes_const(axes: list[int]) -> Output:
    return Constant(np.array(axes, dtype=np.int64)).output(0)


def known_rank(ctx, x: Output) -> int:
    if x.partial_shape.rank.is_dynamic:
        raise ctx.unsupported("the input rank must be known")
    return x.partial_shape.rank.get_length()


@onnx_op("BatchNormalization")
def batch_norm(ctx):
    x = ctx.input(0)
    eps = ctx.attr("epsilon", 1e-5)
    training = ctx.attr("training_mode", 0) if ctx.opset >= 14 else 0
    if training:
        node = BatchNormalization([ctx.input(i) for i in range(5)], epsilon=eps, momentum=ctx.attr("momentum", 0.9))
        return node.outputs()
    if ctx.opset < 14 and any(ctx.output_used(i) for i in range(1, ctx.num_outputs)):
        raise ctx.unsupported("training outputs of BatchNormalization before opset 14")
    return BatchNormInference(x, ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4), epsilon=eps).output(0)


@onnx_op("InstanceNormalization")
def instance_norm(ctx):
    x = ctx.input(0)
    rank = known_rank(ctx, x)
    norm = MVN(x, axes_const(list(range(2, rank))), normalize_variance=True, eps=ctx.attr("epsilon", 1e-5),
               eps_mode="inside_sqrt").output(0)
    scaled = Multiply(norm, per_channel(ctx.input(1), rank)).output(0)
    return Add(scaled, per_channel(ctx.input(2), rank)).output(0)


@onnx_op("LayerNormalization", since=17)
def layer_norm(ctx):
    x = ctx.input(0)
    axis, eps = ctx.attr("axis", -1), ctx.attr("epsilon", 1e-5)
    stats_used = ctx.output_used(1) or ctx.output_used(2)
    if stats_used or x.partial_shape.rank.is_dynamic:
        inputs = [x, ctx.input(1)] + ([ctx.input(2)] if ctx.has_input(2) else [])
        node = LayerNormalization(inputs, axis=axis, epsilon=eps, stash_type=ctx.attr("stash_type", 1))
        return node.outputs()
    rank = x.partial_shape.rank.get_length()
    first = normalize_axis(axis, rank)
    norm = MVN(x, axes_const(list(range(first, rank))), normalize_variance=True, eps=eps,
               eps_mode="inside_sqrt").output(0)
    out = Multiply(norm, ctx.input(1)).output(0)
    return Add(out, ctx.input(2)).output(0) if ctx.has_input(2) else out


@onnx_op("GroupNormalization", since=21)
def group_norm(ctx):
    return GroupNormalization(ctx.input(0), ctx.input(1), ctx.input(2), num_groups=ctx.attr("num_groups"),
                              epsilon=ctx.attr("epsilon", 1e-5)).output(0)


@onnx_op("RMSNormalization", since=23)
def rms_norm(ctx):
    return RMSNormalization(ctx.input(0), ctx.input(1), axis=ctx.attr("axis", -1), epsilon=ctx.attr("epsilon", 1e-5),
                            stash_type=ctx.attr("stash_type", 1)).output(0)


@onnx_op("LRN")
def lrn(ctx):
    if ctx.attr("size") % 2 == 0:
        raise ctx.unsupported("an even size: ONNX sums an asymmetric window, OpenVINO's LRN a symmetric one")
    return LRN(ctx.input(0), axes_const([1]), alpha=ctx.attr("alpha", 1e-4), beta=ctx.attr("beta", 0.75),
               bias=ctx.attr("bias", 1.0), size=ctx.attr("size")).output(0)


@onnx_op("LpNormalization")
def lp_norm(ctx):
    x = ctx.input(0)
    axis, p = ctx.attr("axis", -1), ctx.attr("p", 2)
    # ONNX gives 0 for an all-zero slice: the norm is floored at a tiny value so 0 / tiny = 0.
    if p == 2:
        return NormalizeL2(x, axes_const([axis]), eps=_TINY * _TINY, eps_mode="max").output(0)
    if p == 1:
        reduce_l1 = get_op_class("ReduceL1", "opset4")
        norm = reduce_l1(x, axes_const([axis]), keep_dims=True).output(0)
        dtype = x.element_type.to_dtype() if x.element_type.is_static() else np.float32
        floor = Constant(np.array(_TINY, dtype=dtype)).output(0)
        return Divide(x, Maximum(norm, floor).output(0)).output(0)
    raise ctx.unsupported(f"p must be 1 or 2, got {p}")


@onnx_op("MeanVarianceNormalization")
def mean_variance_norm(ctx):
    axes = ctx.attr("axes", [0, 2, 3])
    return MVN(ctx.input(0), axes_const(axes), normalize_variance=True, eps=1e-9, eps_mode="outside_sqrt").output(0)
