"""Reshape (opset1), Squeeze (opset1) and Unsqueeze (opset1): views that change only the shape."""

from __future__ import annotations

import math

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


def reshape_target(in_dims: list[Dimension] | None, pattern: list[int | None], special_zero: bool) -> list[Dimension]:
    """Resolve a Reshape pattern (``0`` copies an input dim with ``special_zero``, ``-1`` is inferred).

    ``None`` in ``pattern`` is a value unknown before running (a dynamic dim of the output).
    """
    if pattern.count(-1) > 1:
        raise ValidationError(f"the target shape {pattern} has more than one -1")
    out: list[Dimension] = []
    for i, v in enumerate(pattern):
        if v is None or v == -1:
            out.append(Dimension())
        elif v == 0 and special_zero:
            if in_dims is None:
                out.append(Dimension())
            elif i >= len(in_dims):
                raise ValidationError(f"the target shape {pattern} copies dim {i} (0), but the input has rank "
                                      f"{len(in_dims)}")
            else:
                out.append(in_dims[i])
        elif v < -1:
            raise ValidationError(f"the target shape {pattern} has a negative dim {v}")
        else:
            out.append(Dimension(v))
    # Dims copied by a special zero cancel out (they may be dynamic), so [0, -1] of [?, 3, 4] is [?, 12].
    copied = {i for i, v in enumerate(pattern) if v == 0 and special_zero} if in_dims is not None else set()
    rest_in = [d for i, d in enumerate(in_dims or []) if i not in copied]
    known = [d for i, d in enumerate(out) if pattern[i] != -1 and i not in copied]
    if in_dims is not None and all(d.is_static for d in rest_in + known):
        total = math.prod(d.get_length() for d in rest_in)
        rest = math.prod(d.get_length() for d in known)
        if -1 in pattern:
            if rest == 0 and total == 0:
                out[pattern.index(-1)] = Dimension(0)
            elif rest == 0 or total % rest:
                raise ValidationError(f"cannot reshape {PartialShape(in_dims)} to {pattern}")
            else:
                out[pattern.index(-1)] = Dimension(total // rest)
        elif total != rest:
            raise ValidationError(f"cannot reshape an input of shape {PartialShape(in_dims)} ({total} elements) "
                                  f"to {PartialShape(out)} ({rest} elements)")
    return out


@register_op
class Reshape(Node):
    """Reshape to the shape in input 1; ``special_zero`` makes a 0 copy the input dim at that index."""

    type_name, version, num_inputs = "Reshape", "opset1", (2, 2)
    special_zero = Attr("bool", False)

    def infer(self) -> list:
        check_index_type(self, 1, "the target shape")
        ps = self.get_input_partial_shape(0)
        pattern = partial_ints(self, 1)
        if pattern is None:
            n = shape_length(self, 1)
            return [(self.get_input_element_type(0), PartialShape.dynamic(n if n is not None else None))]
        in_dims = None if rank_of(ps) is None else list(ps)
        return [(self.get_input_element_type(0), PartialShape(reshape_target(in_dims, pattern, self.special_zero)))]

    def evaluate(self, inputs: list) -> list:
        x, pattern = inputs[0], [int(v) for v in np.asarray(inputs[1]).reshape(-1)]
        dims = reshape_target([Dimension(d) for d in x.shape], list(pattern), self.special_zero)
        return [np.reshape(x, [d.get_length() for d in dims])]


def _squeeze_axes(node: Node, ps: PartialShape) -> list[int] | None:
    """The axes Squeeze removes, or None if they depend on unknown dims."""
    r = rank_of(ps)
    axes = const_ints(node, 1) if node.get_input_size() > 1 else []
    if axes is None or r is None:
        return None
    if not axes:
        if any(d.is_dynamic for d in ps):
            return None
        return [i for i, d in enumerate(ps) if d == 1]
    axes = sorted(set(normalize_axes(axes, r)))
    if getattr(node, "allow_axis_skip", False):
        if any(ps[a].is_dynamic for a in axes):
            return None
        return [a for a in axes if ps[a] == 1]
    for a in axes:
        if ps[a].is_static and ps[a] != 1:
            raise ValidationError(f"cannot squeeze axis {a}: its dimension is {ps[a]}, not 1")
    return axes


@register_op
class Squeeze(Node):
    """Remove the size-1 axes listed in input 1 (all size-1 axes when it is absent or empty)."""

    type_name, version, num_inputs = "Squeeze", "opset1", (1, 2)

    def infer(self) -> list:
        ps = self.get_input_partial_shape(0)
        axes = _squeeze_axes(self, ps)
        et = self.get_input_element_type(0)
        if axes is None:
            r = rank_of(ps)
            n = shape_length(self, 1) if self.get_input_size() > 1 else None
            if r is not None and n is not None and n.is_static and n.get_length() > 0:
                return [(et, PartialShape.dynamic(r - n.get_length()))]
            return [(et, PartialShape.dynamic())]
        return [(et, PartialShape([d for i, d in enumerate(ps) if i not in axes]))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axes = [] if len(inputs) < 2 or inputs[1] is None else [int(a) for a in np.asarray(inputs[1]).reshape(-1)]
        if not axes:
            return [np.reshape(x, [d for d in x.shape if d != 1])]
        axes = normalize_axes(axes, x.ndim)
        if getattr(self, "allow_axis_skip", False):
            axes = [a for a in axes if x.shape[a] == 1]
        for a in axes:
            if x.shape[a] != 1:
                raise ValidationError(f"cannot squeeze axis {a}: its dimension is {x.shape[a]}, not 1")
        return [np.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])]


@register_op
class SqueezeV15(Squeeze):
    """Squeeze-15: with ``allow_axis_skip``, listed axes whose dimension is not 1 are left in place."""

    type_name, version = "Squeeze", "opset15"
    allow_axis_skip = Attr("bool", False)


@register_op
class Unsqueeze(Node):
    """Insert size-1 axes at the (output) positions listed in input 1."""

    type_name, version, num_inputs = "Unsqueeze", "opset1", (2, 2)

    def infer(self) -> list:
        ps = self.get_input_partial_shape(0)
        et = self.get_input_element_type(0)
        axes = const_ints(self, 1)
        r = rank_of(ps)
        if r is None:
            return [(et, PartialShape.dynamic())]
        if axes is None:
            n = shape_length(self, 1)
            return [(et, PartialShape.dynamic(r + n.get_length()) if n is not None and n.is_static
                     else PartialShape.dynamic())]
        return [(et, PartialShape(_unsqueezed(list(ps), axes)))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axes = [int(a) for a in np.asarray(inputs[1]).reshape(-1)]
        return [np.reshape(x, [int(d) for d in _unsqueezed([Dimension(d) for d in x.shape], axes)])]


def _unsqueezed(dims: list[Dimension], axes: list[int]) -> list[Dimension]:
    out_rank = len(dims) + len(axes)
    axes = normalize_axes(axes, out_rank)
    it = iter(dims)
    return [Dimension(1) if i in axes else next(it) for i in range(out_rank)]
