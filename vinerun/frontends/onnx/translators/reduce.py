"""ONNX reductions (ReduceSum, ReduceMax, ..., ReduceLogSumExp) and ArgMax / ArgMin.

ONNX names the axes in an attribute before opset 13 (ReduceSum) or 18 (the others), in an optional
input since. Absent axes mean "all axes" unless ``noop_with_empty_axes`` is set; OpenVINO's
reductions read an empty axes tensor as "no axes", so the translator spells all axes out.
Limitation: axes computed at run time whose length is not known statically are passed through, so
if they turn out empty the node reduces nothing (ONNX would reduce everything unless noop is set).
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.node import Output
from vinerun.ir.registry import get_op_class
from vinerun.ops.argminmax import ArgMax, ArgMin
from vinerun.ops.arithmetic import Add, Multiply, Subtract
from vinerun.ops.reduction import ReduceL1, ReduceL2, ReduceMax, ReduceMean, ReduceMin, ReduceProd, ReduceSum

# the opset from which each reduction takes its axes as input 1 rather than as an attribute
_AXES_INPUT_SINCE = {"ReduceSum": 13}
_DEFAULT_AXES_INPUT_SINCE = 18


def _statically_empty(axes: Output) -> bool:
    shape = axes.partial_shape
    return shape.is_static and len(shape) == 1 and shape[0].get_length() == 0


def _all_axes(ctx: NodeContext, x: Output) -> Output:
    if x.partial_shape.rank.is_dynamic:
        raise ctx.unsupported("reducing over all axes needs the input's rank, which is unknown")
    return ctx.constant(np.arange(x.partial_shape.rank.get_length(), dtype=np.int64))


def reduction_axes(ctx: NodeContext, x: Output) -> Output | None:
    """The axes to reduce as an Output, or None when the node reduces nothing (a no-op)."""
    if ctx.opset >= _AXES_INPUT_SINCE.get(ctx.op_type, _DEFAULT_AXES_INPUT_SINCE):
        axes = ctx.optional_input(1)
        if axes is not None and not _statically_empty(axes):
            return axes
        return None if ctx.attr("noop_with_empty_axes", 0) else _all_axes(ctx, x)
    if ctx.has_attr("axes"):
        return ctx.constant(np.asarray(ctx.attr("axes"), dtype=np.int64))
    return _all_axes(ctx, x)


def _keep_dims(ctx: NodeContext) -> bool:
    return bool(ctx.attr("keepdims", 1))


def _direct(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx: NodeContext) -> Output:
        x = ctx.input(0)
        axes = reduction_axes(ctx, x)
        if axes is None:
            return x
        return cls(x, axes, keep_dims=_keep_dims(ctx)).output(0)


for _name, _cls in [("ReduceSum", ReduceSum), ("ReduceMean", ReduceMean), ("ReduceMax", ReduceMax),
                    ("ReduceMin", ReduceMin), ("ReduceProd", ReduceProd), ("ReduceL1", ReduceL1),
                    ("ReduceL2", ReduceL2)]:
    _direct(_name, _cls)


@onnx_op("ReduceSumSquare")
def reduce_sum_square(ctx: NodeContext) -> Output:
    x = ctx.input(0)
    axes = reduction_axes(ctx, x)
    square = Multiply(x, x).output(0)
    return square if axes is None else ReduceSum(square, axes, keep_dims=_keep_dims(ctx)).output(0)


@onnx_op("ReduceLogSum")
def reduce_log_sum(ctx: NodeContext) -> Output:
    x = ctx.input(0)
    axes = reduction_axes(ctx, x)
    total = x if axes is None else ReduceSum(x, axes, keep_dims=_keep_dims(ctx)).output(0)
    return get_op_class("Log")(total).output(0)


@onnx_op("ReduceLogSumExp")
def reduce_log_sum_exp(ctx: NodeContext) -> Output:
    """``log(sum(exp(x - m))) + m`` with ``m`` the maximum, so large inputs do not overflow."""
    x = ctx.input(0)
    axes = reduction_axes(ctx, x)
    exp, log = get_op_class("Exp"), get_op_class("Log")
    if axes is None:
        return log(exp(x).output(0)).output(0)
    keep = _keep_dims(ctx)
    shift = ReduceMax(x, axes, keep_dims=True).output(0)
    total = ReduceSum(exp(Subtract(x, shift)).output(0), axes, keep_dims=keep).output(0)
    shift_out = shift if keep else ReduceMax(x, axes, keep_dims=False).output(0)
    return Add(log(total).output(0), shift_out).output(0)


def _arg(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx: NodeContext) -> Output:
        return cls(ctx.input(0), axis=ctx.attr("axis", 0), keepdims=bool(ctx.attr("keepdims", 1)),
                   select_last_index=bool(ctx.attr("select_last_index", 0))).output(0)


_arg("ArgMax", ArgMax)
_arg("ArgMin", ArgMin)
