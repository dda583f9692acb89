"""ONNX indexing ops: Gather*, Scatter*, TensorScatter, OneHot, TopK, NonZero and Unique."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.frontends.onnx.translators._fold import fold, fold1
from vinerun.frontends.onnx.translators.shape import i64
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops.convert import Convert
from vinerun.ops.gather import Gather, GatherElements, GatherND
from vinerun.ops.reshape import Reshape
from vinerun.ops.scatter import ScatterElementsUpdate, ScatterNDUpdate, TensorScatter
from vinerun.ops.sequence_gen import OneHot
from vinerun.ops.topk_unique import NonZero, TopK, Unique

_REDUCTIONS = {"none": "none", "add": "sum", "mul": "prod", "max": "max", "min": "min"}


@onnx_op("Gather")
def gather(ctx: NodeContext) -> Output:
    return fold1(Gather(ctx.input(0), ctx.input(1), i64(ctx.attr("axis", 0))))


@onnx_op("GatherElements", since=11)
def gather_elements(ctx: NodeContext) -> Output:
    return fold1(GatherElements(ctx.input(0), ctx.input(1), axis=ctx.attr("axis", 0)))


@onnx_op("GatherND", since=11)
def gather_nd(ctx: NodeContext) -> Output:
    return fold1(GatherND(ctx.input(0), ctx.input(1), batch_dims=ctx.attr("batch_dims", 0)))


def _reduction(ctx: NodeContext) -> str:
    r = ctx.attr("reduction", "none")
    if r not in _REDUCTIONS:
        raise ctx.unsupported(f"unknown reduction '{r}'")
    return _REDUCTIONS[r]


@onnx_op("Scatter", since=9)
@onnx_op("ScatterElements", since=11)
def scatter_elements(ctx: NodeContext) -> Output:
    return fold1(ScatterElementsUpdate(ctx.input(0), ctx.input(1), ctx.input(2), i64(ctx.attr("axis", 0)),
                                       reduction=_reduction(ctx)))


@onnx_op("ScatterND", since=11)
def scatter_nd(ctx: NodeContext) -> Output:
    return fold1(ScatterNDUpdate(ctx.input(0), ctx.input(1), ctx.input(2), reduction=_reduction(ctx)))


@onnx_op("TensorScatter", since=24)
def tensor_scatter(ctx: NodeContext) -> Output:
    args = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if ctx.has_input(2) else [])
    return fold1(TensorScatter(*args, axis=ctx.attr("axis", -2), mode=ctx.attr("mode", "linear")))


@onnx_op("OneHot", since=9)
def one_hot(ctx: NodeContext) -> Output:
    """values = [off, on]; depth may be any numeric type (taken as an integer)."""
    values = ctx.input(2)
    off = fold1(Reshape(fold1(Gather(values, i64(0), i64(0))), i64([]), special_zero=False))
    on = fold1(Reshape(fold1(Gather(values, i64(1), i64(0))), i64([]), special_zero=False))
    depth = ctx.const_value(1)
    if depth is not None:
        depth_out = i64(int(np.asarray(depth).reshape(-1)[0]))
    else:
        depth_out = fold1(Reshape(Convert(ctx.input(1), destination_type=Type.i64), i64([]), special_zero=False))
    indices = ctx.input(0)
    if indices.element_type.is_real():
        indices = fold1(Convert(indices, destination_type=Type.i64))
    return fold1(OneHot(indices, depth_out, on, off, axis=ctx.attr("axis", -1), negative_indices_mode="normalize"))


@onnx_op("TopK")
def top_k_v1(ctx: NodeContext) -> list[Output]:
    return _top_k(ctx, i64(ctx.attr("k")), largest=True, sort=True)


@onnx_op("TopK", since=10)
def top_k_v10(ctx: NodeContext) -> list[Output]:
    return _top_k(ctx, ctx.input(1), largest=True, sort=True)


@onnx_op("TopK", since=11)
def top_k_v11(ctx: NodeContext) -> list[Output]:
    return _top_k(ctx, ctx.input(1), largest=bool(ctx.attr("largest", 1)), sort=bool(ctx.attr("sorted", 1)))


def _top_k(ctx: NodeContext, k: Output, largest: bool, sort: bool) -> list[Output]:
    k = fold1(Reshape(k, i64([]), special_zero=False))
    return fold(TopK(ctx.input(0), k, axis=ctx.attr("axis", -1), mode="max" if largest else "min",
                     sort="value" if sort else "none", index_element_type=Type.i64, stable=True))


@onnx_op("NonZero", since=9)
def non_zero(ctx: NodeContext) -> Output:
    return fold1(NonZero(ctx.input(0), output_type=Type.i64))


@onnx_op("Unique", since=11)
def unique(ctx: NodeContext) -> list[Output]:
    args = [ctx.input(0)]
    if ctx.has_attr("axis"):
        args.append(i64(ctx.attr("axis")))
    return fold(Unique(*args, sorted=bool(ctx.attr("sorted", 1)), index_element_type=Type.i64,
                       count_element_type=Type.i64))


