"""Bitwise ops on integers and booleans: BitwiseAnd/Or/Xor/Not (opset13) and the shifts (opset15)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.registry import register_op
from vinerun.ops._base import BinaryElementwise, UnaryElementwise


def _check_integral(node, n: int) -> None:
    for i in range(n):
        et = node.get_input_element_type(i)
        if et.is_static() and et.is_real():
            raise ValidationError(f"input {i} must be an integer or boolean type, got {et.get_type_name()}")


class _Bitwise(BinaryElementwise):
    version = "opset13"

    def infer(self) -> list:
        _check_integral(self, 2)
        return super().infer()


@register_op
class BitwiseAnd(_Bitwise):
    """``a & b`` (logical AND for booleans)."""

    type_name = "BitwiseAnd"

    def fn(self, a, b):
        return np.bitwise_and(a, b)


@register_op
class BitwiseOr(_Bitwise):
    """``a | b`` (logical OR for booleans)."""

    type_name = "BitwiseOr"

    def fn(self, a, b):
        return np.bitwise_or(a, b)


@register_op
class BitwiseXor(_Bitwise):
    """``a ^ b`` (logical XOR for booleans)."""

    type_name = "BitwiseXor"

    def fn(self, a, b):
        return np.bitwise_xor(a, b)


@register_op
class BitwiseNot(UnaryElementwise):
    """``~x`` (logical NOT for booleans)."""

    type_name, version = "BitwiseNot", "opset13"

    def infer(self) -> list:
        _check_integral(self, 1)
        return super().infer()

    def fn(self, x):
        return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


class _Shift(BinaryElementwise):
    """Shifts ``a`` by ``b`` bits. A shift below 0 or not below the bit width leaves only the sign
    fill: -1 for a right shift of a negative number, else 0 (as ONNX BitShift defines it)."""

    version = "opset15"

    def infer(self) -> list:
        _check_integral(self, 2)
        return super().infer()

    def shift(self, a: np.ndarray, s: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fn(self, a, b):
        a, b = np.broadcast_arrays(a, b)
        bits = a.dtype.itemsize * 8
        wide = b.astype(np.int64) if b.dtype != np.uint64 else np.minimum(b, bits).astype(np.int64)
        valid = (wide >= 0) & (wide < bits)
        amount = np.where(valid, wide, 0).astype(a.dtype)
        shifted = self.shift(a, amount)
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if self.type_name.endswith("RightShift") else 0
        return np.where(valid, shifted, fill).astype(a.dtype)


@register_op
class BitwiseLeftShift(_Shift):
    """``a << b``, bits shifted out are lost."""

    type_name = "BitwiseLeftShift"

    def shift(self, a, s):
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        return np.left_shift(a.view(unsigned), s.view(unsigned)).view(a.dtype)


@register_op
class BitwiseRightShift(_Shift):
    """``a >> b``, arithmetic for signed types."""

    type_name = "BitwiseRightShift"

    def shift(self, a, s):
        return np.right_shift(a, s)
