"""Softmax (opset1, opset8), LogSoftmax (opset5) and the ONNX-only Hardmax, all along one axis."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._base import normalize_axis
from vinerun.ops._widen import widen


class _AxisOp(Node):
    """One float input normalized along ``axis``; the output has the input's type and shape."""

    num_inputs = (1, 1)
    axis = Attr("int", 1)
    allow_negative_axis = True

    def infer(self) -> list:
        et, shape = self.get_input_element_type(0), self.get_input_partial_shape(0)
        if et.is_static() and not et.is_real():
            raise ValidationError(f"input element type must be floating point, got {et.get_type_name()}")
        if not self.allow_negative_axis and self.axis < 0:
            raise ValidationError(f"axis must be non-negative in {self.version}, got {self.axis}")
        if shape.rank.is_static:
            normalize_axis(self.axis, shape.rank.get_length(), self)
        return [(et, shape)]

    def fn(self, x: np.ndarray, axis: int) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axis = normalize_axis(self.axis, x.ndim, self)
        return [np.asarray(self.fn(widen(x), axis)).astype(x.dtype, copy=False)]


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@register_op
class Softmax(_AxisOp):
    """``exp(x) / sum(exp(x))`` along ``axis`` (negative axes count from the end)."""

    type_name, version = "Softmax", "opset8"

    def fn(self, x, axis):
        return softmax(x, axis)


@register_op
class SoftmaxV1(Softmax):
    """Softmax of opset1: the same, with a non-negative ``axis``."""

    version = "opset1"
    allow_negative_axis = False


@register_op
class LogSoftmax(_AxisOp):
    """``x - log(sum(exp(x)))`` along ``axis``."""

    type_name, version = "LogSoftmax", "opset5"

    def fn(self, x, axis):
        return log_softmax(x, axis)


@register_op
class Hardmax(_AxisOp):
    """ONNX Hardmax: 1 at the first maximum along ``axis``, 0 elsewhere."""

    type_name, version = "Hardmax", "onnx"
    axis = Attr("int", -1)

    def fn(self, x, axis):
        out = np.zeros_like(x)
        if x.size:
            np.put_along_axis(out, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
        return out
