"""Small helpers shared by the shape and data-movement ops (ranks, constant inputs, index types)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


def rank_of(shape: PartialShape) -> int | None:
    """The static rank of ``shape``, or None when the rank is dynamic."""
    return None if shape.rank.is_dynamic else len(shape)


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
    if length is not None and length.is_static:
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


# --- partially known shape values --------------------------------------------------------------------------
# A shape computed in the graph (ShapeOf -> Gather -> Concat -> Reshape) is often known except for a
# dynamic batch dim. Ops that move such values implement ``partial_value() -> list[int | None] | None``
# (the flat values, None where unknown); shape inference reads them with ``partial_ints``.

#: ops whose output holds the same flat values as input 0
_SAME_VALUES = ("Convert", "Squeeze", "Unsqueeze", "Reshape")


def partial_ints(node: Node, i: int) -> list[int | None] | None:
    """The flat values of input ``i``, None for each value unknown before running; None if none can be told."""
    if i >= node.get_input_size() or node.input_value(i) is None:
        return None
    return output_partial_ints(node.input_value(i).node, node.input_value(i).index)


def output_partial_ints(src: Node, index: int = 0) -> list[int | None] | None:
    if src.type_name == "Constant":
        v = np.asarray(src.get_value())
        return [int(x) for x in v.reshape(-1)] if v.dtype.kind in "iu" and v.ndim <= 1 else None
    if index == 0 and src.type_name in _SAME_VALUES and src.get_input_size() > 0:
        return partial_ints(src, 0)
    fn = getattr(src, "partial_value", None)
    return fn() if callable(fn) and index == 0 else None


def partial_dims(values: list[int | None] | None, length: Dimension | None = None) -> PartialShape:
    """A shape from partially known values (None -> dynamic dim); like ``dims_from_values``."""
    if values is not None:
        return PartialShape([Dimension() if v is None or v < 0 else Dimension(v) for v in values])
    return dims_from_values(None, length)
