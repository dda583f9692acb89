"""Running sums and products along an axis: CumSum (opset3) and the ONNX-only CumProd."""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._base import normalize_axis
from vinerun.ops._shape_helpers import check_index_type, const_scalar, rank_of


class _Cumulative(Node):
    """Shared by CumSum/CumProd: axis in input 1 (default 0), ``exclusive`` and ``reverse``."""

    num_inputs = (1, 2)
    exclusive = Attr("bool", False)
    reverse = Attr("bool", False)
    ufunc: np.ufunc = np.add

    def infer(self) -> list:
        if self.get_input_size() > 1:
            check_index_type(self, 1, "axis")
            axis, r = const_scalar(self, 1), rank_of(self.get_input_partial_shape(0))
            if axis is not None and r is not None:
                normalize_axis(axis, r, self)
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axis = 0 if len(inputs) < 2 or inputs[1] is None else int(np.asarray(inputs[1]).reshape(-1)[0])
        axis = normalize_axis(axis, x.ndim, self)
        y = np.flip(x, axis) if self.reverse else x
        out = self.ufunc.accumulate(y, axis=axis, dtype=x.dtype)
        if self.exclusive:
            identity = np.full_like(np.take(out, [0], axis=axis), self.ufunc.identity)
            out = np.concatenate([identity, np.take(out, np.arange(x.shape[axis] - 1), axis=axis)], axis=axis)
        if self.reverse:
            out = np.flip(out, axis)
        return [np.array(out, dtype=x.dtype, order="C")]


@register_op
class CumSum(_Cumulative):
    """Cumulative sum along the axis in input 1."""

    type_name, version = "CumSum", "opset3"
    ufunc = np.add


@register_op
class CumProd(_Cumulative):
    """ONNX CumProd: cumulative product along the axis in input 1."""

    type_name, version = "CumProd", "onnx"
    ufunc = np.multiply
