"""ONNX ops that map one-to-one onto a core op: MatMul, Identity, Constant.

Element-wise families live in math.py, activations.py, logic.py and cast.py.
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.core_ops import Constant
from vinerun.ops.matmul import MatMul


@onnx_op("MatMul")
def matmul(ctx):
    return MatMul(ctx.input(0), ctx.input(1)).output(0)


@onnx_op("Identity")
def identity(ctx):
    return ctx.input(0)


@onnx_op("Constant")
def constant(ctx):
    for key in ("value", "sparse_value"):
        if ctx.has_attr(key):
            return Constant(ctx.attr(key)).output(0)
    if ctx.has_attr("value_float"):
        return Constant(np.array(ctx.attr("value_float"), np.float32)).output(0)
    if ctx.has_attr("value_floats"):
        return Constant(np.array(ctx.attr("value_floats"), np.float32)).output(0)
    if ctx.has_attr("value_int"):
        return Constant(np.array(ctx.attr("value_int"), np.int64)).output(0)
    if ctx.has_attr("value_ints"):
        return Constant(np.array(ctx.attr("value_ints"), np.int64)).output(0)
    if ctx.has_attr("value_string"):
        return Constant(np.array(ctx.attr("value_string"), dtype=object)).output(0)
    if ctx.has_attr("value_strings"):
        return Constant(np.array(ctx.attr("value_strings"), dtype=object)).output(0)
    raise ctx.unsupported("Constant without a value attribute")
