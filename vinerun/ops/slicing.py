"""Slice (opset8) and StridedSlice (opset1): strided windows with Python-style clamping."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._shape_helpers import (
    check_index_type,
    const_ints,
    normalize_axes,
    partial_ints,
    rank_of,
    shape_length,
)


def slice_length(size: int, start: int, stop: int, step: int) -> int:
    """Elements a ``start:stop:step`` window keeps of ``size`` (clamped as Python/ONNX do)."""
    if step == 0:
        raise ValidationError("a slice step cannot be 0")
    return len(range(*slice(start, stop, step).indices(size)))


def _ints(v: object) -> list[int]:
    return [int(x) for x in np.asarray(v).reshape(-1)]


@register_op
class Slice(Node):
    """Slice (opset8): inputs data, start, stop, step and optional axes (default 0..len(start)-1)."""

    type_name, version, num_inputs = "Slice", "opset8", (4, 5)

    def _windows(self, rank: int, start: list[int], stop: list[int], step: list[int],
                 axes: list[int] | None) -> dict[int, tuple[int, int, int]]:
        if not len(start) == len(stop) == len(step):
            raise ValidationError(f"start, stop and step have different lengths: {len(start)}, {len(stop)}, "
                                  f"{len(step)}")
        axes = list(range(len(start))) if axes is None else normalize_axes(axes, rank)
        if len(axes) != len(start):
            raise ValidationError(f"axes has {len(axes)} values but start has {len(start)}")
        if 0 in step:
            raise ValidationError("a slice step cannot be 0")
        return {a: (b, e, s) for a, b, e, s in zip(axes, start, stop, step, strict=True)}

    def infer(self) -> list:
        for i, what in ((1, "start"), (2, "stop"), (3, "step"), (4, "axes")):
            if self.has_input(i):
                check_index_type(self, i, what)
        ps, et = self.get_input_partial_shape(0), self.get_input_element_type(0)
        r = rank_of(ps)
        if r is None:
            return [(et, PartialShape.dynamic())]
        vals = [const_ints(self, i) for i in (1, 2, 3)]
        axes = const_ints(self, 4) if self.has_input(4) else None
        if any(v is None for v in vals) or (self.has_input(4) and axes is None):
            n = shape_length(self, 1)
            if axes is None and not self.has_input(4) and n is not None and n.is_static:
                return [(et, PartialShape([Dimension() if i < n.get_length() else d for i, d in enumerate(ps)]))]
            return [(et, PartialShape.dynamic(r))]
        win = self._windows(r, *vals, axes)  # type: ignore[arg-type]
        out = []
        for i, d in enumerate(ps):
            if i not in win:
                out.append(d)
            elif d.is_static:
                out.append(Dimension(slice_length(d.get_length(), *win[i])))
            else:
                out.append(Dimension())
        return [(et, PartialShape(out))]

    def partial_value(self) -> list[int | None] | None:
        """A window of a partially known 1-D value (shape arithmetic)."""
        values = partial_ints(self, 0)
        vals = [const_ints(self, i) for i in (1, 2, 3)]
        if values is None or any(v is None or len(v) != 1 for v in vals) or rank_of(
                self.get_input_partial_shape(0)) != 1:
            return None
        start, stop, step = (v[0] for v in vals)  # type: ignore[index]
        return None if step == 0 else values[start:stop:step]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axes = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else None
        win = self._windows(x.ndim, _ints(inputs[1]), _ints(inputs[2]), _ints(inputs[3]), axes)
        idx = tuple(slice(*win[i]) if i in win else slice(None) for i in range(x.ndim))
        return [np.array(x[idx], order="C")]


@register_op
class StridedSlice(Node):
    """StridedSlice (opset1): begin/end/stride with TF-style masks (begin, end, new-axis, shrink, ellipsis).

    A 1 in ``begin_mask``/``end_mask`` ignores that begin/end value (the whole extent is used).
    """

    type_name, version, num_inputs = "StridedSlice", "opset1", (3, 4)
    begin_mask = Attr("ints", [])
    end_mask = Attr("ints", [])
    new_axis_mask = Attr("ints", [])
    shrink_axis_mask = Attr("ints", [])
    ellipsis_mask = Attr("ints", [])

    @staticmethod
    def _bit(mask: list[int], i: int) -> bool:
        return i < len(mask) and mask[i] != 0

    def _plan(self, rank: int, n: int) -> list[tuple[str, int, int]]:
        """(kind, input axis, spec index) per output position; kind: all, new, shrink or slice."""
        if sum(self._bit(self.ellipsis_mask, i) for i in range(n)) > 1:
            raise ValidationError(f"ellipsis_mask {self.ellipsis_mask} has more than one ellipsis")
        consumed = sum(1 for i in range(n) if not self._bit(self.new_axis_mask, i)
                       and not self._bit(self.ellipsis_mask, i))
        plan: list[tuple[str, int, int]] = []
        axis = 0
        for i in range(n):
            if self._bit(self.ellipsis_mask, i):
                for _ in range(rank - consumed):
                    plan.append(("all", axis, i))
                    axis += 1
            elif self._bit(self.new_axis_mask, i):
                plan.append(("new", -1, i))
            else:
                plan.append(("shrink" if self._bit(self.shrink_axis_mask, i) else "slice", axis, i))
                axis += 1
        if axis > rank:
            raise ValidationError(f"the slice spec addresses {axis} axes, but the input has rank {rank}")
        plan += [("all", a, -1) for a in range(axis, rank)]
        return plan

    def _window(self, i: int, begin: list[int], end: list[int], stride: list[int]) -> slice:
        s = stride[i] if i < len(stride) else 1
        if s == 0:
            raise ValidationError("a stride cannot be 0")
        b = None if self._bit(self.begin_mask, i) else begin[i]
        e = None if self._bit(self.end_mask, i) else end[i]
        return slice(b, e, s)

    def infer(self) -> list:
        ps, et = self.get_input_partial_shape(0), self.get_input_element_type(0)
        r = rank_of(ps)
        begin, end = const_ints(self, 1), const_ints(self, 2)
        stride = const_ints(self, 3) if self.has_input(3) else []
        n = len(begin) if begin is not None else shape_length(self, 1)
        if isinstance(n, Dimension):
            n = n.get_length() if n.is_static else None
        if r is None or n is None:
            return [(et, PartialShape.dynamic())]
        known = begin is not None and end is not None and stride is not None
        out = []
        for kind, axis, i in self._plan(r, n):
            if kind == "all":
                out.append(ps[axis])
            elif kind == "new":
                out.append(Dimension(1))
            elif kind == "slice":
                d = ps[axis]
                if known and d.is_static:
                    w = self._window(i, begin, end, stride)  # type: ignore[arg-type]
                    out.append(Dimension(len(range(*w.indices(d.get_length())))))
                else:
                    out.append(Dimension())
        return [(et, PartialShape(out))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        begin, end = _ints(inputs[1]), _ints(inputs[2])
        stride = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else []
        idx: list[object] = []
        for kind, axis, i in self._plan(x.ndim, len(begin)):
            if kind == "all":
                idx.append(slice(None))
            elif kind == "new":
                idx.append(np.newaxis)
            elif kind == "shrink":
                b = begin[i]
                if not -x.shape[axis] <= b < x.shape[axis]:
                    raise ValidationError(f"shrink index {b} is out of range for axis {axis} of size "
                                          f"{x.shape[axis]}")
                idx.append(b)
            else:
                idx.append(self._window(i, begin, end, stride))
        return [np.array(x[tuple(idx)], order="C")]
