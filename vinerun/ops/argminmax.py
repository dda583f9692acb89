"""ONNX ArgMax / ArgMin: int64 indices of the extreme values along one axis.

OpenVINO expresses these as TopK(k=1); keeping them as ONNX-only ops carries ``select_last_index``
(which TopK has no attribute for) and states the intent directly.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import normalize_axis


class _ArgReduce(Node):
    """Index of the first (or, with ``select_last_index``, last) extreme value along ``axis``."""

    num_inputs = (1, 1)
    version = "onnx"
    axis = Attr("int", 0)
    keepdims = Attr("bool", True)
    select_last_index = Attr("bool", False)

    def infer(self) -> list:
        shape = self.get_input_partial_shape(0)
        et = self.get_input_element_type(0)
        if et.is_static() and et.get_type_name() in ("string",):
            raise ValidationError(f"input element type {et.get_type_name()} is not supported")
        if shape.rank.is_dynamic:
            return [(Type.i64, PartialShape.dynamic())]
        dims = list(shape)
        axis = normalize_axis(self.axis, len(dims), self)
        if self.keepdims:
            dims[axis] = 1
        else:
            del dims[axis]
        return [(Type.i64, PartialShape(dims))]

    def pick(self, x: np.ndarray, axis: int) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axis = normalize_axis(self.axis, x.ndim, self)
        if x.shape[axis] == 0:
            raise ValidationError(f"cannot take {self.type_name} along axis {axis} of size 0")
        if self.select_last_index:
            idx = x.shape[axis] - 1 - self.pick(np.flip(x, axis), axis)
        else:
            idx = self.pick(x, axis)
        if self.keepdims:
            idx = np.expand_dims(idx, axis)
        return [np.asarray(idx, dtype=np.int64)]


@register_op
class ArgMax(_ArgReduce):
    """Indices of the maxima along ``axis``."""

    type_name = "ArgMax"

    def pick(self, x, axis):
        return np.argmax(x, axis=axis)


@register_op
class ArgMin(_ArgReduce):
    """Indices of the minima along ``axis``."""

    type_name = "ArgMin"

    def pick(self, x, axis):
        return np.argmin(x, axis=axis)
