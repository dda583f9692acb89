"""Reductions over the axes given by input 1: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
ReduceLogicalAnd, ReduceLogicalOr (opset1) and ReduceL1, ReduceL2 (opset4).

OpenVINO semantics: an empty ``axes`` tensor reduces nothing (the output equals the input);
``keep_dims`` keeps reduced axes as size 1. Reducing an empty set gives the operation's identity
(0 for sums, 1 for products, the lowest / highest value of the type for max / min).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._base import normalize_axis
from vinerun.ops._widen import widen


def normalize_axes(axes: np.ndarray | list[int], rank: int, node: Node | None = None) -> list[int]:
    """Axes mapped into [0, rank), deduplicated and sorted; raises if one is out of range."""
    return sorted({normalize_axis(int(a), rank, node) for a in np.asarray(axes).reshape(-1)})


def reduced_shape(shape: PartialShape, axes: list[int], keep_dims: bool) -> PartialShape:
    """The shape of ``shape`` reduced over (normalized) ``axes``."""
    out: list[Dimension | int] = []
    for i, d in enumerate(shape):
        if i in axes:
            if keep_dims:
                out.append(1)
        else:
            out.append(d)
    return PartialShape(out)


class ArithmeticReduction(Node):
    """Base of the reductions: ``(data, axes) -> reduced data`` of data's element type."""

    num_inputs = (2, 2)
    keep_dims = Attr("bool", False)
    #: element types the op accepts (None: any)
    accepts: ClassVar[tuple[str, ...] | None] = None

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        if self.accepts is not None and et.is_static() and et.get_type_name() not in self.accepts:
            raise ValidationError(f"data element type {et.get_type_name()} is not one of {list(self.accepts)}")
        axes_et = self.get_input_element_type(1)
        if axes_et.is_static() and not axes_et.is_integral_number():
            raise ValidationError(f"axes must be an integer tensor, got {axes_et.get_type_name()}")
        axes_shape = self.get_input_partial_shape(1)
        if axes_shape.rank.is_static and axes_shape.rank.get_length() > 1:
            raise ValidationError(f"axes must be a scalar or a 1-D tensor, got shape {axes_shape}")
        shape = self.get_input_partial_shape(0)
        if shape.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        rank = shape.rank.get_length()
        axes = self.const_input(1)
        if axes is not None:
            return [(et, reduced_shape(shape, normalize_axes(axes, rank, self), self.keep_dims))]
        if self.keep_dims:
            return [(et, PartialShape.dynamic(rank))]
        if axes_shape.is_static:
            n = int(np.prod([d.get_length() for d in axes_shape])) if len(axes_shape) else 1
            if n == 0:
                return [(et, shape)]
            return [(et, PartialShape.dynamic(max(rank - n, 0)))]
        return [(et, PartialShape.dynamic())]

    def reduce(self, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        """Reduce ``x`` over ``axes`` (non-empty, normalized), keeping dims."""
        raise NotImplementedError

    def evaluate(self, inputs: list) -> list:
        x, axes_in = inputs
        axes = tuple(normalize_axes(axes_in, x.ndim, self))
        if not axes:
            return [np.array(x, copy=True)]
        out = np.asarray(self.reduce(x, axes))
        if not self.keep_dims:
            out = out.reshape([d for i, d in enumerate(x.shape) if i not in axes])
        return [out.astype(x.dtype, copy=False)]


def _widened(fn: Callable[..., np.ndarray], x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``fn`` (np.sum, np.prod) over ``axes`` of ``widen(x)``, keeping dims; integers stay in their type."""
    w = widen(x)
    return fn(w, axis=axes, keepdims=True, dtype=None if w.dtype.kind == "f" else w.dtype)


@register_op
class ReduceSum(ArithmeticReduction):
    """Sum over axes."""

    type_name, version = "ReduceSum", "opset1"

    def reduce(self, x, axes):
        return _widened(np.sum, x, axes)


@register_op
class ReduceMean(ArithmeticReduction):
    """Arithmetic mean over axes (integers truncate toward zero)."""

    type_name, version = "ReduceMean", "opset1"

    def reduce(self, x, axes):
        with np.errstate(invalid="ignore", divide="ignore"):
            if x.dtype.kind in "iu":
                count = int(np.prod([x.shape[a] for a in axes]))
                total = np.sum(x, axis=axes, keepdims=True, dtype=np.int64 if x.dtype.kind == "i" else np.uint64)
                return np.trunc(total / max(count, 1))
            return np.mean(widen(x), axis=axes, keepdims=True)


@register_op
class ReduceProd(ArithmeticReduction):
    """Product over axes."""

    type_name, version = "ReduceProd", "opset1"

    def reduce(self, x, axes):
        return _widened(np.prod, x, axes)


def _limit(dtype: np.dtype, highest: bool) -> object:
    """The highest (or lowest) value of ``dtype``: the result of min (or max) over an empty set."""
    if dtype == np.bool_:
        return highest
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if highest else info.min
    return np.inf if highest else -np.inf


@register_op
class ReduceMax(ArithmeticReduction):
    """Maximum over axes; an empty set gives the lowest value of the type (-inf for floats)."""

    type_name, version = "ReduceMax", "opset1"

    def reduce(self, x, axes):
        return np.max(x, axis=axes, keepdims=True, initial=_limit(x.dtype, highest=False))


@register_op
class ReduceMin(ArithmeticReduction):
    """Minimum over axes; an empty set gives the highest value of the type (+inf for floats)."""

    type_name, version = "ReduceMin", "opset1"

    def reduce(self, x, axes):
        return np.min(x, axis=axes, keepdims=True, initial=_limit(x.dtype, highest=True))


@register_op
class ReduceL1(ArithmeticReduction):
    """Sum of absolute values over axes."""

    type_name, version = "ReduceL1", "opset4"

    def reduce(self, x, axes):
        return np.sum(np.abs(widen(x)), axis=axes, keepdims=True)


@register_op
class ReduceL2(ArithmeticReduction):
    """Square root of the sum of squares over axes."""

    type_name, version = "ReduceL2", "opset4"

    def reduce(self, x, axes):
        w = x.astype(np.float64) if x.dtype.kind in "iub" else widen(x)
        return np.sqrt(np.sum(w * w, axis=axes, keepdims=True))


@register_op
class ReduceLogicalAnd(ArithmeticReduction):
    """Logical AND over axes of a boolean tensor (True for an empty set)."""

    type_name, version = "ReduceLogicalAnd", "opset1"
    accepts = ("boolean",)

    def reduce(self, x, axes):
        return np.all(x, axis=axes, keepdims=True)


@register_op
class ReduceLogicalOr(ArithmeticReduction):
    """Logical OR over axes of a boolean tensor (False for an empty set)."""

    type_name, version = "ReduceLogicalOr", "opset1"
    accepts = ("boolean",)

    def reduce(self, x, axes):
        return np.any(x, axis=axes, keepdims=True)
