"""ONNX matrix products: Gemm (as MatMul, Multiply, Add), Einsum and Det."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.node import Output
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.det import Det
from vinerun.ops.einsum import Einsum
from vinerun.ops.matmul import MatMul


def _scalar_like(ctx: NodeContext, value: float, like: Output) -> Output:
    et = like.element_type
    dtype = et.to_dtype() if et.is_static() else np.float32
    return ctx.constant(np.array(value).astype(dtype))


@onnx_op("Gemm")
def gemm(ctx: NodeContext) -> Output:
    """``alpha * A' @ B' + beta * C`` with ``A'``, ``B'`` optionally transposed; C broadcasts."""
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    y = MatMul(ctx.input(0), ctx.input(1), transpose_a=bool(ctx.attr("transA", 0)),
               transpose_b=bool(ctx.attr("transB", 0))).output(0)
    if ctx.has_input(2):  # openvino's name for the product before its bias (as for Conv; see conv.py)
        y.node.set_friendly_name(f"{ctx.name}/WithoutBiases")
    if alpha != 1.0:
        y = Multiply(y, _scalar_like(ctx, alpha, y)).output(0)
    c = ctx.optional_input(2)
    if c is not None and beta != 0.0:
        if beta != 1.0:
            c = Multiply(c, _scalar_like(ctx, beta, c)).output(0)
        y = Add(y, c).output(0)
    return y


@onnx_op("Einsum")
def einsum(ctx: NodeContext) -> Output:
    return Einsum([ctx.input(i) for i in range(len(ctx.inputs))], equation=ctx.attr("equation")).output(0)


@onnx_op("Det")
def det(ctx: NodeContext) -> Output:
    return Det(ctx.input(0)).output(0)
