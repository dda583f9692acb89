"""ONNX data-movement ops: Transpose, Concat, Split, Slice, Pad, DepthToSpace, SpaceToDepth, Trilu,
ReverseSequence, CumSum, CumProd, Col2Im and Compress."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.frontends.onnx.translators._fold import fold, fold1
from vinerun.frontends.onnx.translators.shape import i64, shape_of
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add, FloorMod, Subtract
from vinerun.ops.broadcast import Broadcast
from vinerun.ops.col2im import Col2Im
from vinerun.ops.concat_split import Concat, Split, VariadicSplit
from vinerun.ops.convert import Convert
from vinerun.ops.cumulative import CumProd, CumSum
from vinerun.ops.gather import Gather
from vinerun.ops.pad import Pad
from vinerun.ops.reshape import Reshape, Squeeze
from vinerun.ops.scatter import ScatterUpdate
from vinerun.ops.sequence_gen import Range
from vinerun.ops.slicing import Slice
from vinerun.ops.topk_unique import NonZero
from vinerun.ops.transpose import DepthToSpace, SpaceToDepth, Transpose
from vinerun.ops.triangular import ReverseSequence, Trilu


@onnx_op("Transpose")
def transpose(ctx: NodeContext) -> Output:
    return fold1(Transpose(ctx.input(0), i64(ctx.attr("perm", []))))


@onnx_op("Concat")
def concat(ctx: NodeContext) -> Output:
    axis = ctx.attr("axis", 1) if ctx.opset < 4 else ctx.attr("axis")
    parts = [o for o in ctx.inputs if o is not None]
    return fold1(Concat(parts, axis=axis))


# --- Split ---------------------------------------------------------------------------------------------
def _split(ctx: NodeContext, x: Output, axis: int, lengths: Output | list[int] | None) -> list[Output]:
    n = ctx.num_outputs
    if lengths is None:
        return fold(Split(x, i64(axis), num_splits=n))
    if isinstance(lengths, list):
        lengths = i64(lengths)
    return fold(VariadicSplit(x, i64(axis), lengths))


@onnx_op("Split")
def split_v1(ctx: NodeContext) -> list[Output]:
    lengths = ctx.attr("split", None)
    if lengths is None and ctx.opset < 2 and ctx.has_input(1):
        return _split(ctx, ctx.input(0), ctx.attr("axis", 0), ctx.input(1))
    return _split(ctx, ctx.input(0), ctx.attr("axis", 0), lengths)


@onnx_op("Split", since=13)
def split_v13(ctx: NodeContext) -> list[Output]:
    return _split(ctx, ctx.input(0), ctx.attr("axis", 0), ctx.optional_input(1))


@onnx_op("Split", since=18)
def split_v18(ctx: NodeContext) -> list[Output]:
    x, axis = ctx.input(0), ctx.attr("axis", 0)
    if ctx.has_input(1) or not ctx.has_attr("num_outputs"):
        return _split(ctx, x, axis, ctx.optional_input(1))
    n = ctx.attr("num_outputs")
    ps = x.partial_shape
    dim = ps[axis] if ps.rank.is_static else None
    if dim is None or dim.is_dynamic:
        return fold(Split(x, i64(axis), num_splits=n))
    size = dim.get_length()
    chunk = -(-size // n)
    lengths = [min(chunk, max(size - i * chunk, 0)) for i in range(n)]
    return _split(ctx, x, axis, lengths)


# --- Slice ---------------------------------------------------------------------------------------------
@onnx_op("Slice")
def slice_v1(ctx: NodeContext) -> Output:
    starts, ends = ctx.attr("starts"), ctx.attr("ends")
    axes = ctx.attr("axes", list(range(len(starts))))
    return fold1(Slice(ctx.input(0), i64(starts), i64(ends), i64([1] * len(starts)), i64(axes)))


@onnx_op("Slice", since=10)
def slice_v10(ctx: NodeContext) -> Output:
    starts = ctx.input(1)
    steps = ctx.optional_input(4)
    if steps is None:
        known = ctx.const_value(1)
        steps = (i64(np.ones(np.shape(known), np.int64)) if known is not None
                 else fold1(Broadcast(Constant(np.ones((), starts.element_type.to_dtype())), shape_of(starts))))
    args = [ctx.input(0), starts, ctx.input(2), steps]
    if ctx.has_input(3):
        args.append(ctx.input(3))
    return fold1(Slice(*args))


# --- Pad -----------------------------------------------------------------------------------------------
def _pads_begin_end(ctx: NodeContext, pads: Output, axes: Output | None, rank: int) -> tuple[Output, Output]:
    """ONNX pads ([begins..., ends...] over ``axes``) as full per-axis pads_begin and pads_end."""
    begin, end = fold(Split(pads, i64(0), num_splits=2))
    if axes is None:
        return begin, end
    zeros = i64([0] * rank)
    return (fold1(ScatterUpdate(zeros, axes, begin, i64(0))), fold1(ScatterUpdate(zeros, axes, end, i64(0))))


def _wrap_pad(x: Output, begin: Output, end: Output, rank: int) -> Output:
    """Wrap padding as one Gather per axis: output j reads input (j - begin) mod size."""
    sizes = shape_of(x)
    for axis in range(rank):
        b = fold1(Gather(begin, i64(axis), i64(0)))
        e = fold1(Gather(end, i64(axis), i64(0)))
        if b.node.type_name == "Constant" and e.node.type_name == "Constant" and not b.node.get_value().any() \
                and not e.node.get_value().any():
            continue
        n = fold1(Gather(sizes, i64(axis), i64(0)))
        positions = fold1(Range(fold1(Subtract(i64(0), b)), fold1(Add(n, e)), i64(1), output_type=Type.i64))
        x = fold1(Gather(x, fold1(FloorMod(positions, n)), i64(axis)))
    return x


def _pad(ctx: NodeContext, x: Output, mode: str, pads: Output, value: Output | None, axes: Output | None) -> Output:
    rank = x.partial_shape.rank
    if rank.is_dynamic:
        raise ctx.unsupported("Pad needs an input of known rank")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ctx.unsupported(f"unknown pad mode '{mode}'")
    pb, pe = _pads_begin_end(ctx, pads, axes, rank.get_length())
    if mode == "wrap":
        return _wrap_pad(x, pb, pe, rank.get_length())
    args = [x, pb, pe]
    if mode == "constant" and value is not None:
        args.append(fold1(Reshape(value, i64([]), special_zero=False)))
    return fold1(Pad(*args, pad_mode=mode))


@onnx_op("Pad")
def pad_v2(ctx: NodeContext) -> Output:
    x = ctx.input(0)
    pads = np.asarray(ctx.attr("pads" if ctx.opset >= 2 else "paddings"), np.int64)
    value = ctx.attr("value", 0.0)
    et = x.element_type
    v = Constant(np.asarray(value, dtype=et.to_dtype() if et.is_static() else np.float32)).output(0)
    return _pad(ctx, x, ctx.attr("mode", "constant"), i64(pads), v, None)


@onnx_op("Pad", since=11)
def pad_v11(ctx: NodeContext) -> Output:
    pads = ctx.input(1)
    if pads.element_type != Type.i64:
        pads = fold1(Convert(pads, destination_type=Type.i64))
    return _pad(ctx, ctx.input(0), ctx.attr("mode", "constant"), pads, ctx.optional_input(2), ctx.optional_input(3))


# --- block rearrangements, triangles, sequences, cumulative -------------------------------------------
_BLOCK_MODES = {"DCR": "blocks_first", "CRD": "depth_first"}


@onnx_op("DepthToSpace")
def depth_to_space(ctx: NodeContext) -> Output:
    return fold1(DepthToSpace(ctx.input(0), mode=_BLOCK_MODES[ctx.attr("mode", "DCR")],
                              block_size=ctx.attr("blocksize")))


@onnx_op("SpaceToDepth")
def space_to_depth(ctx: NodeContext) -> Output:
    return fold1(SpaceToDepth(ctx.input(0), mode=_BLOCK_MODES[ctx.attr("mode", "DCR")],
                              block_size=ctx.attr("blocksize")))


@onnx_op("Trilu", since=14)
def trilu(ctx: NodeContext) -> Output:
    args = [ctx.input(0)] + ([ctx.input(1)] if ctx.has_input(1) else [])
    return fold1(Trilu(*args, upper=bool(ctx.attr("upper", 1))))


@onnx_op("ReverseSequence", since=10)
def reverse_sequence(ctx: NodeContext) -> Output:
    return fold1(ReverseSequence(ctx.input(0), ctx.input(1), batch_axis=ctx.attr("batch_axis", 1),
                                 seq_axis=ctx.attr("time_axis", 0)))


def _cumulative(cls: type) -> Callable[[NodeContext], Output]:
    def translate(ctx: NodeContext) -> Output:
        return fold1(cls(ctx.input(0), ctx.input(1), exclusive=bool(ctx.attr("exclusive", 0)),
                         reverse=bool(ctx.attr("reverse", 0))))

    return translate


onnx_op("CumSum", since=11)(_cumulative(CumSum))
onnx_op("CumProd", since=26)(_cumulative(CumProd))


@onnx_op("Col2Im", since=18)
def col2im(ctx: NodeContext) -> Output:
    block = ctx.const_value(2)
    n = len(block) if block is not None else ctx.input(2).partial_shape[0].get_length()
    pads = ctx.attr("pads", [0] * 2 * n)
    return fold1(Col2Im(ctx.input(0), ctx.input(1), ctx.input(2), strides=ctx.attr("strides", [1] * n),
                        dilations=ctx.attr("dilations", [1] * n), pads_begin=pads[:n], pads_end=pads[n:]))


@onnx_op("Compress", since=9)
def compress(ctx: NodeContext) -> Output:
    """Gather the slices where the condition is true: NonZero -> Squeeze -> Gather."""
    x = ctx.input(0)
    positions = fold1(Squeeze(fold1(NonZero(ctx.input(1))), i64([0])))
    axis = ctx.attr("axis", None)
    if axis is None:
        x, axis = fold1(Reshape(x, i64([-1]), special_zero=False)), 0
    return fold1(Gather(x, positions, i64(axis)))
