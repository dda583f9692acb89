"""Small helpers shared by the shape and data-movement ops (ranks, constant inputs, index types)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


def rank_of(shape: PartialShape) -> int | None:
    """The static rank of ``shape``, or None when the rank is dynamic."""
    return None if shape.rank.is_dynamic() else len(shape)


def const_ints(node: Node, i: int) -> list[int] | None:
    """Input ``i`` as a flat list of ints when it is a Constant, else None."""
    v = node.const_input(i)
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def const_scalar(node: Node, i: int) -> int | None:
    """Input ``i`` as one int when it is a Constant, else None."""
    v = const_ints(node, i)
    if v is None:
        return None
    if len(v) != 1:
        raise ValidationError(f"input {i} must hold one value, got {len(v)}")
    return v[0]


def check_index_type(node: Node, i: int, what: str) -> None:
    """Raise unless input ``i`` has an integer (or dynamic) element type."""
    et = node.get_input_element_type(i)
    if et.is_static() and not et.is_integral_number():
        raise ValidationError(f"{what} (input {i}) must be an integer tensor, got {et.get_type_name()}")


def index_type(value: object) -> Type:
    """Validate an ``output_type``/``index_element_type`` attribute: i32 or i64."""
    t = Type(value)
    if t not in (Type.i32, Type.i64):
        raise ValidationError(f"the index element type must be i32 or i64, got {t.get_type_name()}")
    return t


def normalize_axes(axes: list[int], rank: int, what: str = "axis") -> list[int]:
    """Map possibly negative axes into [0, rank); raise on out-of-range or repeated axes."""
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValidationError(f"{what} {a} is out of range for rank {rank}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        raise ValidationError(f"{what} values {axes} repeat an axis")
    return out


def dims_from_values(values: list[int] | None, length: Dimension | None = None) -> PartialShape:
    """A shape whose dims are ``values`` if known, else ``length`` dynamic dims (or dynamic rank)."""
    if values is not None:
        return PartialShape([Dimension(v) for v in values])
    if length is not None and length.is_static():
        return PartialShape.dynamic(length.get_length())
    return PartialShape.dynamic()


def shape_length(node: Node, i: int) -> Dimension | None:
    """The number of values in 1-D input ``i`` (a shape-like input), if static."""
    ps = node.get_input_partial_shape(i)
    r = rank_of(ps)
    if r == 0:
        return Dimension(1)
    if r == 1:
        return ps[0]
    return None
