"""ONNX Softmax, LogSoftmax and Hardmax.

From opset 13 these normalize along one ``axis`` (default -1). Before, they "coerce the input to
2-D at ``axis``" (default 1): dims before ``axis`` become rows, the rest one row of columns, so the
op runs over all trailing dims at once. That is a Reshape to 2-D, the op on axis 1, and a Reshape
back; when ``axis`` is the last dim it is simply the op on that axis.
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.node import Output
from vinerun.ir.registry import get_op_class
from vinerun.ops._base import normalize_axis
from vinerun.ops.softmax import Hardmax, LogSoftmax, Softmax


def _coerced_2d(ctx: NodeContext, x: Output, make: type) -> Output:
    """Apply ``make(.., axis=1)`` to ``x`` seen as 2-D at the ONNX ``axis`` (opset < 13)."""
    shape = x.partial_shape
    if shape.rank.is_dynamic:
        raise ctx.unsupported("the pre-opset-13 semantics need the input's rank, which is unknown")
    rank = shape.rank.get_length()
    axis = normalize_axis(ctx.attr("axis", 1), rank) if rank else 0
    if axis >= rank - 1:
        return make(x, axis=-1).output(0) if rank else make(x, axis=0).output(0)
    dims = list(shape)
    head, tail = dims[:axis], dims[axis:]
    if all(d.is_static for d in head):
        rows, cols = int(np.prod([d.get_length() for d in head])), -1
    elif all(d.is_static for d in tail):
        rows, cols = -1, int(np.prod([d.get_length() for d in tail]))
    else:
        raise ctx.unsupported(f"cannot flatten shape {shape} to 2-D at axis {axis}: both sides are dynamic")
    reshape = get_op_class("Reshape")
    flat = reshape(x, ctx.constant(np.array([rows, cols], np.int64)), special_zero=False).output(0)
    y = make(flat, axis=1).output(0)
    if shape.is_static:
        back = ctx.constant(np.array([d.get_length() for d in dims], np.int64))
    else:
        back = get_op_class("ShapeOf")(x).output(0)
    return reshape(y, back, special_zero=False).output(0)


def _register(op_type: str, cls: type) -> None:
    @onnx_op(op_type, since=1)
    def legacy(ctx: NodeContext) -> Output:
        return _coerced_2d(ctx, ctx.input(0), cls)

    @onnx_op(op_type, since=13)
    def translate(ctx: NodeContext) -> Output:
        return cls(ctx.input(0), axis=ctx.attr("axis", -1)).output(0)


_register("Softmax", Softmax)
_register("LogSoftmax", LogSoftmax)
_register("Hardmax", Hardmax)
