"""Concat (opset1), Split (opset1) and VariadicSplit (opset1): joining and cutting along an axis."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops._base import normalize_axis
from vinerun.ops._shape_helpers import const_ints, const_scalar, partial_ints, rank_of


@register_op
class Concat(Node):
    """Join the inputs along ``axis``; all other dims must agree."""

    type_name, version, num_inputs = "Concat", "opset1", (1, 1 << 30)
    axis = Attr("int", 0)

    def infer(self) -> list:
        et: Type = Type.dynamic
        for i in range(self.get_input_size()):
            t = self.get_input_element_type(i)
            merged = et.merge(t)
            if merged is None:
                raise ValidationError(f"inputs have different element types: {et.get_type_name()} and "
                                      f"{t.get_type_name()}")
            et = merged
        shapes = [self.get_input_partial_shape(i) for i in range(self.get_input_size())]
        ranks = {rank_of(s) for s in shapes} - {None}
        if not ranks:
            return [(et, PartialShape.dynamic())]
        if len(ranks) > 1:
            raise ValidationError(f"inputs have different ranks: {[str(s) for s in shapes]}")
        r = ranks.pop()
        axis = normalize_axis(self.axis, r, self)
        out: list[Dimension] = [Dimension()] * r
        total = Dimension(0)
        for s in shapes:
            if rank_of(s) is None:
                total = Dimension()
                continue
            for i, d in enumerate(s):
                if i == axis:
                    continue
                m = out[i].merge(d)
                if m is None:
                    raise ValidationError(f"input shapes {[str(x) for x in shapes]} differ outside axis {axis}")
                out[i] = m
            total = total + s[axis]
        out[axis] = total
        return [(et, PartialShape(out))]

    def partial_value(self) -> list[int | None] | None:
        """Joined partially known 1-D values (shape arithmetic)."""
        parts = [partial_ints(self, i) for i in range(self.get_input_size())]
        return None if any(p is None for p in parts) else [v for p in parts for v in p]  # type: ignore[union-attr]

    def evaluate(self, inputs: list) -> list:
        axis = normalize_axis(self.axis, inputs[0].ndim, self)
        return [np.concatenate(inputs, axis=axis)]


def _split_axis(node: Node, ps: PartialShape) -> int | None:
    axis = const_scalar(node, 1)
    r = rank_of(ps)
    if axis is None or r is None:
        return None
    return normalize_axis(axis, r, node)


def _split_shapes(ps: PartialShape, axis: int | None, lengths: list[Dimension]) -> list[PartialShape]:
    if axis is None:
        r = rank_of(ps)
        return [PartialShape.dynamic(r) for _ in lengths]
    return [PartialShape([n if i == axis else d for i, d in enumerate(ps)]) for n in lengths]


@register_op
class Split(Node):
    """Cut input 0 into ``num_splits`` equal parts along the axis in input 1."""

    type_name, version, num_inputs = "Split", "opset1", (2, 2)
    num_splits = Attr("int")

    def infer(self) -> list:
        n = self.num_splits
        if n < 1:
            raise ValidationError(f"num_splits must be positive, got {n}")
        ps, et = self.get_input_partial_shape(0), self.get_input_element_type(0)
        axis = _split_axis(self, ps)
        part = Dimension()
        if axis is not None and ps[axis].is_static:
            size = ps[axis].get_length()
            if size % n:
                raise ValidationError(f"dimension {size} of axis {axis} does not split into {n} equal parts")
            part = Dimension(size // n)
        return [(et, s) for s in _split_shapes(ps, axis, [part] * n)]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axis = normalize_axis(int(np.asarray(inputs[1]).reshape(-1)[0]), x.ndim, self)
        if x.shape[axis] % self.num_splits:
            raise ValidationError(f"dimension {x.shape[axis]} of axis {axis} does not split into "
                                  f"{self.num_splits} equal parts")
        return [np.array(p, order="C") for p in np.split(x, self.num_splits, axis=axis)]


def resolve_split_lengths(lengths: list[int], size: int | None) -> list[int | None]:
    """Fill in the one ``-1`` of ``lengths`` from the axis size (None if unknown)."""
    if lengths.count(-1) > 1:
        raise ValidationError(f"split_lengths {lengths} has more than one -1")
    if any(v < -1 for v in lengths):
        raise ValidationError(f"split_lengths {lengths} has a negative length")
    known = sum(v for v in lengths if v != -1)
    if size is None:
        return [None if v == -1 else v for v in lengths]
    if -1 in lengths:
        if known > size:
            raise ValidationError(f"split_lengths {lengths} exceed the axis size {size}")
        return [size - known if v == -1 else v for v in lengths]
    if known != size:
        raise ValidationError(f"split_lengths {lengths} sum to {known}, but the axis size is {size}")
    return list(lengths)


@register_op
class VariadicSplit(Node):
    """Cut input 0 along the axis in input 1 into parts of the lengths in input 2 (one may be -1)."""

    type_name, version, num_inputs = "VariadicSplit", "opset1", (3, 3)

    def infer(self) -> list:
        ps, et = self.get_input_partial_shape(0), self.get_input_element_type(0)
        lengths = const_ints(self, 2)
        if lengths is None:
            n = self.get_input_partial_shape(2)
            if rank_of(n) != 1 or n[0].is_dynamic:
                raise ValidationError("split_lengths must be a 1-D tensor of known length")
            count = n[0].get_length()
            return [(et, PartialShape.dynamic(rank_of(ps)))] * count
        axis = _split_axis(self, ps)
        size = ps[axis].get_length() if axis is not None and ps[axis].is_static else None
        resolved = resolve_split_lengths(lengths, size)
        return [(et, s) for s in _split_shapes(ps, axis, [Dimension(v) if v is not None else Dimension()
                                                          for v in resolved])]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axis = normalize_axis(int(np.asarray(inputs[1]).reshape(-1)[0]), x.ndim, self)
        lengths = resolve_split_lengths([int(v) for v in np.asarray(inputs[2]).reshape(-1)], x.shape[axis])
        bounds = np.cumsum([0] + lengths)
        idx = [slice(None)] * x.ndim
        outs = []
        for b, e in zip(bounds[:-1], bounds[1:], strict=True):
            idx[axis] = slice(int(b), int(e))
            outs.append(np.array(x[tuple(idx)], order="C"))
        return outs
