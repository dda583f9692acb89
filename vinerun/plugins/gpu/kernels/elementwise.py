"""Binary element-wise kernels on device tensors: arithmetic, comparisons, logic, bitwise ops and Select.

Broadcasting is NumPy's (torch's is the same); a node with ``auto_broadcast`` other than numpy runs on the host.
Integer arithmetic wraps as NumPy's does; integer division and remainder by zero give 0 as the references do
(the divisor is made 1 first: CUDA has no integer division trap, CPU torch raises). Float remainders follow
NumPy's ``divmod`` (``fmod``, then corrected), which is exact where ``a - b * floor(a / b)`` is not.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import (
    FLOAT_TYPES,
    GpuKernel,
    constant_input,
    gpu_kernel,
    input_type,
    torch_types,
)

Binary = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
#: integer types whose torch arithmetic wraps exactly like NumPy's
INT_TYPES = ("i8", "u8", "i16", "i32", "i64")
NUMBER_TYPES = FLOAT_TYPES + INT_TYPES


def numpy_broadcast(node: Node) -> bool:
    """The node broadcasts NumPy-style (its ``auto_broadcast``, where it has one)."""
    return node.get_attributes().get("auto_broadcast", "numpy") == "numpy"


def _accepts(node: Node, types: tuple[str, ...]) -> bool:
    """Both inputs of one type among ``types``, NumPy broadcasting, device tensor types."""
    t = input_type(node, 0)
    return torch_types(node) and numpy_broadcast(node) and t == input_type(node, 1) and t in types


def binary_kernel(op: Binary, name: str) -> GpuKernel:
    return GpuKernel(lambda x: [op(x[0], x[1])], f"gpu_{name}")


def _safe_divisor(fn: Binary) -> Binary:
    """``fn(a, b)`` on integers where ``b != 0``, and 0 where ``b == 0``."""

    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        zero = b == 0
        q = fn(a, torch.where(zero, torch.ones_like(b), b))
        return torch.where(zero, torch.zeros_like(q), q)

    return run


def _float_floor_mod(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """NumPy's ``mod``: ``fmod``, moved into the divisor's sign; a zero takes the divisor's sign."""
    m = torch.fmod(a, b)
    fix = (m != 0) & ((b < 0) != (m < 0))
    m = torch.where(fix, m + b, m)
    return torch.where(m == 0, torch.copysign(torch.zeros_like(m), b), m)


_ARITH: dict[str, Binary] = {"Add": torch.add, "Subtract": torch.sub, "Multiply": torch.mul,
                             "Maximum": torch.maximum, "Minimum": torch.minimum,
                             "SquaredDifference": lambda a, b: torch.square(a - b)}


@gpu_kernel(*_ARITH)
def arithmetic(node: Node, device: torch.device) -> GpuKernel | None:
    if not _accepts(node, NUMBER_TYPES):
        return None
    return binary_kernel(_ARITH[node.type_name], node.type_name.lower())


@gpu_kernel("Divide")
def divide(node: Node, device: torch.device) -> GpuKernel | None:
    if not _accepts(node, NUMBER_TYPES):
        return None
    if input_type(node, 0) in FLOAT_TYPES:
        return binary_kernel(torch.div, "div")
    mode = "floor" if node.m_pythondiv else "trunc"
    return binary_kernel(_safe_divisor(lambda a, b: torch.div(a, b, rounding_mode=mode)), f"div_{mode}")


@gpu_kernel("FloorMod", "Mod")
def remainder(node: Node, device: torch.device) -> GpuKernel | None:
    if not _accepts(node, NUMBER_TYPES):
        return None
    floor = node.type_name == "FloorMod"
    if input_type(node, 0) in FLOAT_TYPES:
        return binary_kernel(_float_floor_mod if floor else torch.fmod, "floor_mod" if floor else "fmod")
    return binary_kernel(_safe_divisor(torch.remainder if floor else torch.fmod), "remainder" if floor else "fmod")


@gpu_kernel("Power")
def power(node: Node, device: torch.device) -> GpuKernel | None:
    """Floats; integers only with a constant exponent without negative values (the reference takes those
    through f64)."""
    if not _accepts(node, NUMBER_TYPES):
        return None
    if input_type(node, 0) not in FLOAT_TYPES:
        exponent = constant_input(node, 1)
        if exponent is None or (exponent < 0).any():
            return None
    return binary_kernel(torch.pow, "pow")


_COMPARE: dict[str, Binary] = {"Equal": torch.eq, "NotEqual": torch.ne, "Less": torch.lt, "LessEqual": torch.le,
                               "Greater": torch.gt, "GreaterEqual": torch.ge}
_LOGICAL: dict[str, Binary] = {"LogicalAnd": torch.logical_and, "LogicalOr": torch.logical_or,
                               "LogicalXor": torch.logical_xor}
_BITWISE: dict[str, Binary] = {"BitwiseAnd": torch.bitwise_and, "BitwiseOr": torch.bitwise_or,
                               "BitwiseXor": torch.bitwise_xor}
#: op type -> (function, the input types it takes)
_BOOLEAN_LIKE: dict[str, tuple[Binary, tuple[str, ...]]] = {
    **{k: (f, NUMBER_TYPES + ("boolean",)) for k, f in _COMPARE.items()},
    **{k: (f, ("boolean",)) for k, f in _LOGICAL.items()},
    **{k: (f, INT_TYPES + ("boolean",)) for k, f in _BITWISE.items()},
}


@gpu_kernel(*_BOOLEAN_LIKE)
def comparison_or_logic(node: Node, device: torch.device) -> GpuKernel | None:
    """Comparisons (any type), logical ops (booleans) and bitwise ops (integers and booleans)."""
    op, types = _BOOLEAN_LIKE[node.type_name]
    return binary_kernel(op, node.type_name.lower()) if _accepts(node, types) else None


def _shift(left: bool) -> Binary:
    """A shift by ``b`` bits; amounts outside [0, bits) leave the sign fill (-1 for a negative number shifted
    right, else 0), as the reference."""

    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        bits = a.element_size() * 8
        valid = (b >= 0) & (b < bits)
        amount = torch.where(valid, b, torch.zeros_like(b))
        if left:
            return torch.where(valid, torch.bitwise_left_shift(a, amount), torch.zeros_like(a))
        fill = torch.where(a < 0, torch.full_like(a, -1), torch.zeros_like(a))
        return torch.where(valid, torch.bitwise_right_shift(a, amount), fill)

    return run


@gpu_kernel("BitwiseLeftShift", "BitwiseRightShift")
def shift(node: Node, device: torch.device) -> GpuKernel | None:
    if not _accepts(node, INT_TYPES):
        return None
    left = node.type_name == "BitwiseLeftShift"
    return binary_kernel(_shift(left), "left_shift" if left else "right_shift")


@gpu_kernel("BitwiseNot")
def bitwise_not(node: Node, device: torch.device) -> GpuKernel | None:
    t = input_type(node, 0)
    if t not in INT_TYPES + ("boolean",):
        return None
    return GpuKernel(lambda x: [torch.bitwise_not(x[0])], "gpu_bitwise_not")


@gpu_kernel("LogicalNot")
def logical_not(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) != "boolean":
        return None
    return GpuKernel(lambda x: [torch.logical_not(x[0])], "gpu_logical_not")


@gpu_kernel("Select")
def select(node: Node, device: torch.device) -> GpuKernel | None:
    if (not torch_types(node) or not numpy_broadcast(node) or input_type(node, 0) != "boolean"
            or input_type(node, 1) != input_type(node, 2)):
        return None
    return GpuKernel(lambda x: [torch.where(x[0], x[1], x[2])], "gpu_where")
