"""ONNX shape ops: Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Expand, Tile, ConstantOfShape,
Range, EyeLike and Dropout (inference)."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.frontends.onnx.translators._fold import fold1
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops.broadcast import Broadcast, Tile
from vinerun.ops.concat_split import Concat
from vinerun.ops.dropout import Dropout as DropoutOp
from vinerun.ops.gather import Gather
from vinerun.ops.reduction import ReduceProd
from vinerun.ops.reshape import Reshape, Squeeze, Unsqueeze
from vinerun.ops.sequence_gen import Eye, Range
from vinerun.ops.shape_of import ShapeOf, Size
from vinerun.ops.slicing import Slice


def i64(values: object) -> Output:
    return Constant(np.asarray(values, dtype=np.int64)).output(0)


def shape_of(x: Output) -> Output:
    """The shape of ``x`` as i64 data, a Constant when it is static."""
    return fold1(ShapeOf(x))


@onnx_op("Shape")
def shape(ctx: NodeContext) -> Output:
    out = shape_of(ctx.input(0))
    start, end = ctx.attr("start", 0), ctx.attr("end", None)
    if start == 0 and end is None:
        return out
    big = np.iinfo(np.int64).max
    return fold1(Slice(out, i64([start]), i64([big if end is None else end]), i64([1])))


@onnx_op("Size")
def size(ctx: NodeContext) -> Output:
    return fold1(Size(ctx.input(0)))


@onnx_op("Reshape")
def reshape_v1(ctx: NodeContext) -> Output:
    return fold1(Reshape(ctx.input(0), i64(ctx.attr("shape")), special_zero=True))


@onnx_op("Reshape", since=5)
def reshape(ctx: NodeContext) -> Output:
    return fold1(Reshape(ctx.input(0), ctx.input(1), special_zero=not ctx.attr("allowzero", 0)))


@onnx_op("Flatten")
def flatten(ctx: NodeContext) -> Output:
    """Reshape to 2-D. The target shape stays generic in the batch (``[0, -1]`` with special zero for axis 1, a
    ShapeOf expression for other axes) so that ``Model.reshape`` to another batch still works, as in
    OpenVINO's frontend; compiling folds the expression once shapes are static."""
    x = ctx.input(0)
    axis = ctx.attr("axis", 1)
    if axis < 0:
        if x.partial_shape.rank.is_dynamic:
            raise ctx.unsupported("a negative axis needs an input of known rank")
        axis += len(x.partial_shape)
    if axis == 0:
        return fold1(Reshape(x, i64([1, -1]), special_zero=False))
    if axis == 1:
        return fold1(Reshape(x, i64([0, -1]), special_zero=True))
    lead_dims = Slice(ShapeOf(x), i64([0]), i64([axis]), i64([1])).output(0)
    first = ReduceProd(lead_dims, i64([0]), keep_dims=True).output(0)
    return Reshape(x, Concat([first, i64([-1])], axis=0), special_zero=False).output(0)


@onnx_op("Squeeze")
def squeeze_v1(ctx: NodeContext) -> Output:
    axes = ctx.attr("axes", None)
    if axes is None:
        return fold1(Squeeze(ctx.input(0)))
    return fold1(Squeeze(ctx.input(0), i64(axes)))


@onnx_op("Squeeze", since=13)
def squeeze(ctx: NodeContext) -> Output:
    if not ctx.has_input(1):
        return fold1(Squeeze(ctx.input(0)))
    return fold1(Squeeze(ctx.input(0), ctx.input(1)))


@onnx_op("Unsqueeze")
def unsqueeze_v1(ctx: NodeContext) -> Output:
    return fold1(Unsqueeze(ctx.input(0), i64(ctx.attr("axes"))))


@onnx_op("Unsqueeze", since=13)
def unsqueeze(ctx: NodeContext) -> Output:
    return fold1(Unsqueeze(ctx.input(0), ctx.input(1)))


@onnx_op("Expand", since=8)
def expand(ctx: NodeContext) -> Output:
    return fold1(Broadcast(ctx.input(0), ctx.input(1), mode="bidirectional"))


@onnx_op("Tile")
def tile(ctx: NodeContext) -> Output:
    if ctx.opset < 6:
        raise ctx.unsupported("Tile-1 (tiles/axis inputs) is not supported; use opset >= 6")
    return fold1(Tile(ctx.input(0), ctx.input(1)))


@onnx_op("ConstantOfShape", since=9)
def constant_of_shape(ctx: NodeContext) -> Output:
    value = ctx.attr("value", None)
    value = np.zeros((), np.float32) if value is None else np.asarray(value).reshape(())
    return fold1(Broadcast(Constant(value), ctx.input(0), mode="numpy"))


@onnx_op("Range", since=11)
def range_(ctx: NodeContext) -> Output:
    et = ctx.input(0).element_type
    if et.is_dynamic():
        raise ctx.unsupported("the element type of start must be known")
    return fold1(Range(ctx.input(0), ctx.input(1), ctx.input(2), output_type=et))


@onnx_op("EyeLike", since=9)
def eye_like(ctx: NodeContext) -> Output:
    x = ctx.input(0)
    dtype = ctx.attr("dtype", None)
    et = Type.from_onnx(dtype) if dtype is not None else x.element_type
    s = shape_of(x)
    rows = fold1(Gather(s, i64(0), i64(0)))
    cols = fold1(Gather(s, i64(1), i64(0)))
    return fold1(Eye(rows, cols, i64(ctx.attr("k", 0)), output_type=et))


@onnx_op("Dropout")
def dropout(ctx: NodeContext) -> list[Output]:
    """Identity (and an all-true mask) unless training_mode may be true; then the Dropout op decides."""
    x = ctx.input(0)
    if ctx.opset >= 12 and ctx.has_input(2):
        training = ctx.const_value(2)
        if training is None or bool(np.asarray(training).reshape(-1)[0]):
            ratio = ctx.input(1) if ctx.has_input(1) else Constant(np.asarray(0.5, np.float32)).output(0)
            return DropoutOp(x, ratio, ctx.input(2), seed=ctx.attr("seed", None)).outputs()
    outs = [x]
    if ctx.output_used(1):
        mask_type = Type.boolean if ctx.opset >= 10 else x.element_type
        one = np.ones((), mask_type.to_dtype())
        outs.append(fold1(Broadcast(Constant(one), shape_of(x), mode="numpy")))
    return outs
