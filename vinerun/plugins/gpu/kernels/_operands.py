"""Helpers of the data-movement kernels: integer operands (shapes, axes, pads) and static output shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import constant_input


@dataclass(frozen=True)
class IntOperand:
    """An integer operand: its constant value, or (``host``) read from the device tensor at run time."""

    index: int
    value: tuple[int, ...] | None

    @property
    def host(self) -> bool:
        return self.value is None

    def get(self, inputs: list[Any]) -> list[int]:
        """The operand's values as a flat list (a host read when it is not a constant)."""
        if self.value is not None:
            return list(self.value)
        return [int(v) for v in inputs[self.index].reshape(-1).tolist()]


def int_operand(node: Node, i: int) -> IntOperand | None:
    """Input ``i`` as an integer operand, or None when the node has no such input."""
    if i >= node.get_input_size() or node.input_value(i) is None:
        return None
    value = constant_input(node, i)
    return IntOperand(i, None if value is None else tuple(int(v) for v in np.asarray(value).reshape(-1)))


def any_host(*operands: IntOperand | None) -> bool:
    """Whether one of the operands is read on the host at run time."""
    return any(op is not None and op.host for op in operands)


def static_shape(node: Node, i: int = 0) -> tuple[int, ...] | None:
    """Output ``i``'s shape when it is static."""
    ps = node.get_output_partial_shape(i)
    return tuple(int(d) for d in ps.to_shape()) if ps.is_static else None
