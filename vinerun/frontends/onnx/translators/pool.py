"""ONNX pooling -> MaxPool / AvgPool (dilated AveragePool, LpPool and MaxUnpool keep ONNX-only ops).

``ceil_mode`` maps to ``rounding_type="ceil_torch"`` (the opset14 ops): ONNX drops a last window that
would start in the end padding, which plain ``ceil`` keeps.
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.frontends.onnx.translators.conv import spatial_rank, static_dims, window_attrs
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output
from vinerun.ir.registry import get_op_class
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add, Divide, FloorMod, Multiply, Subtract
from vinerun.ops.pooling import AvgPool, AvgPool14, MaxPool, MaxPool14
from vinerun.ops.pooling_onnx import AveragePool, LpPool, MaxUnpool


def pool_attrs(ctx, n: int, dilated: bool = True) -> dict:
    attrs = window_attrs(ctx, n)
    if not dilated:
        attrs.pop("dilations")
    attrs["kernel"] = ctx.attr("kernel_shape")
    attrs["rounding_type"] = "ceil_torch" if ctx.attr("ceil_mode", 0) else "floor"
    return attrs


def column_major(idx: Output, x: Output) -> Output:
    """Row-major flat indices over ``[N, C, H, W]`` renumbered with H and W swapped (storage_order=1)."""
    dims = static_dims(x)
    if dims is None or len(dims) != 4:
        raise ValueError("storage_order=1 needs a static 4-D input")
    h, w = dims[2], dims[3]

    def c(v: int) -> Output:
        return Constant(np.array(v, dtype=np.int64)).output(0)

    rem = FloorMod(idx, c(h * w)).output(0)
    row = Divide(rem, c(w)).output(0)
    col = FloorMod(rem, c(w)).output(0)
    base = Subtract(idx, rem).output(0)
    return Add(Add(base, Multiply(col, c(h)).output(0)).output(0), row).output(0)


@onnx_op("MaxPool")
def max_pool(ctx):
    x = ctx.input(0)
    n = spatial_rank(ctx, x)
    attrs = pool_attrs(ctx, n)
    cls = MaxPool14 if attrs["rounding_type"] == "ceil_torch" else MaxPool
    node = cls(x, index_element_type=Type.i64, axis=0, **attrs)
    if not ctx.output_used(1):
        return node.output(0)
    idx = node.output(1)
    if ctx.attr("storage_order", 0) == 1:
        try:
            idx = column_major(idx, x)
        except ValueError as e:
            raise ctx.unsupported(str(e)) from e
    return [node.output(0), idx]


@onnx_op("AveragePool")
def average_pool(ctx):
    x = ctx.input(0)
    n = spatial_rank(ctx, x)
    attrs = pool_attrs(ctx, n)
    exclude = not ctx.attr("count_include_pad", 0)
    if any(d != 1 for d in attrs["dilations"]):
        return AveragePool(x, exclude_pad=exclude, **attrs).output(0)
    attrs.pop("dilations")
    cls = AvgPool14 if attrs["rounding_type"] == "ceil_torch" else AvgPool
    return cls(x, exclude_pad=exclude, **attrs).output(0)


@onnx_op("LpPool")
def lp_pool(ctx):
    x = ctx.input(0)
    n = spatial_rank(ctx, x)
    return LpPool(x, p=ctx.attr("p", 2), **pool_attrs(ctx, n)).output(0)


def global_pool(ctx, kind: str):
    x = ctx.input(0)
    ps = x.partial_shape
    if ps.rank.is_static and all(d.is_static for d in list(ps)[2:]):
        kernel = [d.get_length() for d in list(ps)[2:]]
        window = {"strides": [1] * len(kernel), "pads_begin": [0] * len(kernel), "pads_end": [0] * len(kernel)}
        if kind == "max":
            return MaxPool(x, kernel=kernel, dilations=[1] * len(kernel), **window).output(0)
        if kind == "avg":
            return AvgPool(x, kernel=kernel, **window).output(0)
        return LpPool(x, kernel=kernel, p=ctx.attr("p", 2)).output(0)
    if ps.rank.is_dynamic or kind == "lp":
        raise ctx.unsupported("global pooling over dynamic spatial dims needs a known rank")
    reduce_op = get_op_class("ReduceMax" if kind == "max" else "ReduceMean", "opset1")
    axes = Constant(np.arange(2, ps.rank.get_length(), dtype=np.int64)).output(0)
    return reduce_op(x, axes, keep_dims=True).output(0)


@onnx_op("GlobalMaxPool")
def global_max_pool(ctx):
    return global_pool(ctx, "max")


@onnx_op("GlobalAveragePool")
def global_average_pool(ctx):
    return global_pool(ctx, "avg")


@onnx_op("GlobalLpPool")
def global_lp_pool(ctx):
    return global_pool(ctx, "lp")


@onnx_op("MaxUnpool")
def max_unpool(ctx):
    x = ctx.input(0)
    n = spatial_rank(ctx, x)
    attrs = window_attrs(ctx, n)
    inputs = [x, ctx.input(1)] + ([ctx.input(2)] if ctx.has_input(2) else [])
    return MaxUnpool(inputs, kernel=ctx.attr("kernel_shape"), strides=attrs["strides"],
                     pads_begin=attrs["pads_begin"], pads_end=attrs["pads_end"]).output(0)
