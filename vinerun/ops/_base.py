"""Shared op bases: element-wise unary and binary ops, and shape-inference helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


class UnaryElementwise(Node):
    """One input, one output of the same type and shape. Subclasses define ``fn`` or ``evaluate``."""

    num_inputs = (1, 1)

    def fn(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        return [np.asarray(self.fn(x)).astype(x.dtype, copy=False)]


class BinaryElementwise(Node):
    """Two inputs broadcast NumPy-style (``auto_broadcast="numpy"``); output keeps input 0's type."""

    num_inputs = (2, 2)
    auto_broadcast = Attr("str", "numpy")
    #: output element type; None means "same as the inputs"
    output_type: Type | None = None

    def fn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def infer(self) -> list:
        a, b = self.get_input_element_type(0), self.get_input_element_type(1)
        if a.is_static() and b.is_static() and a != b:
            raise ValidationError(f"input element types differ: {a.get_type_name()} and {b.get_type_name()}")
        shape = broadcast_shapes(self.get_input_partial_shape(0), self.get_input_partial_shape(1))
        return [(self.output_type or a.merge(b) or a, shape)]

    def evaluate(self, inputs: list) -> list:
        a, b = inputs
        out = np.asarray(self.fn(a, b))
        want = np.bool_ if self.output_type == Type.boolean else a.dtype
        return [out.astype(want, copy=False)]


def normalize_axis(axis: int, rank: int, node: Node | None = None) -> int:
    """Map a possibly negative axis into [0, rank); raise naming the node if out of range."""
    if not -rank <= axis < max(rank, 1):
        where = f" of {node.type_name} '{node.friendly_name}'" if node is not None else ""
        raise ValidationError(f"axis {axis}{where} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def dims_of(shape: PartialShape) -> list[Dimension] | None:
    """The dims list, or None for dynamic rank."""
    return None if shape.rank.is_dynamic else list(shape)


def static_or_none(values: Any) -> list[int] | None:
    return None if values is None else [int(v) for v in np.asarray(values).reshape(-1)]


def without_attrs(*names: str) -> Callable[[type[Node]], type[Node]]:
    """Class decorator for an older op version that lacks attributes of the class it extends.

    The attributes are no longer accepted or serialized; reading one still gives its default.

    >>> @register_op
    ... @without_attrs("batch_dims")
    ... class GatherV1(Gather): ...
    """

    def deco(cls: type[Node]) -> type[Node]:
        for name in names:
            del cls._attr_specs[name]
        return cls

    return deco
