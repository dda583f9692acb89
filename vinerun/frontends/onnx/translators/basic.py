"""ONNX ops that map one-to-one onto an op: arithmetic, activations, MatMul, Identity, Constant."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.core_ops import Constant
from vinerun.ops.activations import Relu, Sigmoid, Tanh
from vinerun.ops.arithmetic import Add, Divide, Maximum, Minimum, Multiply, Subtract
from vinerun.ops.matmul import MatMul


def _binary(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        return cls(ctx.input(0), ctx.input(1)).output(0)


for _name, _cls in [("Add", Add), ("Sub", Subtract), ("Mul", Multiply), ("Div", Divide)]:
    _binary(_name, _cls)


def _unary(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        return cls(ctx.input(0)).output(0)


for _name, _cls in [("Relu", Relu), ("Sigmoid", Sigmoid), ("Tanh", Tanh)]:
    _unary(_name, _cls)


def _variadic(op_type: str, cls: type) -> None:
    @onnx_op(op_type)
    def translate(ctx):
        acc = ctx.input(0)
        for i in range(1, len(ctx.inputs)):
            acc = cls(acc, ctx.input(i)).output(0)
        return acc


for _name, _cls in [("Max", Maximum), ("Min", Minimum), ("Sum", Add)]:
    _variadic(_name, _cls)


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
