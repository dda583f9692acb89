"""GPU binary element-wise kernels (on torch's CPU device) against the NumPy references, per dtype."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU, check, const, param, rand
from vinerun.ops import arithmetic, bitwise, comparison, logical
from vinerun.plugins.gpu.kernels import select_kernel

FLOATS = ["f32", "f16"]
INTS = ["i32", "i64", "i8", "u8"]
SHAPES = [([2, 3, 4], [3, 1]), ([5], [])]


def _binary(cls, et, shapes, seed=0, **attrs):
    a, b = shapes
    node = cls(param(et, a), param(et, b), **attrs)
    return node, [rand(et, a, seed), rand(et, b, seed + 1)]


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("et", FLOATS + INTS)
@pytest.mark.parametrize("name", ["Add", "Subtract", "Multiply", "Maximum", "Minimum", "SquaredDifference"])
def test_arithmetic(name, et, shapes):
    check(*_binary(getattr(arithmetic, name), et, shapes))


@pytest.mark.parametrize("et", FLOATS + INTS)
@pytest.mark.parametrize("pythondiv", [True, False])
def test_divide_by_zero_and_rounding(et, pythondiv):
    node, (a, b) = _binary(arithmetic.Divide, et, ([4, 6], [4, 6]), m_pythondiv=pythondiv)
    b.reshape(-1)[::5] = 0
    check(node, [a, b])


@pytest.mark.parametrize("et", FLOATS + INTS)
@pytest.mark.parametrize("name", ["FloorMod", "Mod"])
def test_remainders(et, name):
    node, (a, b) = _binary(getattr(arithmetic, name), et, ([4, 6], [4, 6]))
    b.reshape(-1)[::7] = 0
    if et in FLOATS:
        a.reshape(-1)[:3] = [np.inf, 0.0, -1.0]
        b.reshape(-1)[:3] = [2.0, -3.0, np.inf]
    check(node, [a, b])


@pytest.mark.parametrize("et", FLOATS)
def test_power_float(et):
    a, b = np.abs(rand(et, [3, 4], 0)) + 0.1, rand(et, [4], 1, -2, 2)
    check(arithmetic.Power(param(et, [3, 4]), param(et, [4])), [a, b], rtol=2e-3 if et == "f16" else 1e-6)


@pytest.mark.parametrize("et", ["i32", "i64", "u8"])
def test_power_int_constant_exponent(et):
    a = rand(et, [2, 4])
    e = np.array([0, 1, 3, 7], a.dtype)
    check(arithmetic.Power(param(et, [2, 4]), const(e, e.dtype)), [a, e])


@pytest.mark.parametrize("et", FLOATS + INTS + ["boolean"])
@pytest.mark.parametrize("name", ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"])
def test_comparisons(et, name):
    node, (a, b) = _binary(getattr(comparison, name), et, ([3, 4], [4]))
    if et in FLOATS:
        a[0, 0] = np.nan
        b[1] = a[1, 1]
    check(node, [a, b])


@pytest.mark.parametrize("name", ["LogicalAnd", "LogicalOr", "LogicalXor"])
def test_logical(name):
    check(*_binary(getattr(logical, name), "boolean", ([3, 4], [1, 4])))


def test_logical_not_and_select():
    x = rand("boolean", [3, 4])
    check(logical.LogicalNot(param("boolean", [3, 4])), [x])
    for et in ("f32", "i64", "boolean"):
        node = logical.Select(param("boolean", [3, 4]), param(et, [4]), param(et, [3, 1]))
        check(node, [x, rand(et, [4], 1), rand(et, [3, 1], 2)])


@pytest.mark.parametrize("et", INTS + ["boolean"])
@pytest.mark.parametrize("name", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise(et, name):
    check(*_binary(getattr(bitwise, name), et, ([3, 4], [4])))


@pytest.mark.parametrize("et", INTS + ["boolean"])
def test_bitwise_not(et):
    check(bitwise.BitwiseNot(param(et, [5])), [rand(et, [5])])


@pytest.mark.parametrize("et", INTS)
@pytest.mark.parametrize("name", ["BitwiseLeftShift", "BitwiseRightShift"])
def test_shifts_out_of_range_amounts(et, name):
    a = rand(et, [12])
    bits = a.dtype.itemsize * 8
    amounts = np.array([0, 1, 3, bits - 1, bits, bits + 3, -1, 2, 5, 0, 1, 7], dtype=np.int64)
    b = amounts.astype(a.dtype) if et != "u8" else np.clip(amounts, 0, 255).astype(np.uint8)
    check(getattr(bitwise, name)(param(et, [12]), param(et, [12])), [a, b])


def test_mixed_types_and_pdpd_broadcast_run_on_host():
    node = arithmetic.Add(param("f32", [2, 3]), param("f32", [2, 3]), auto_broadcast="pdpd")
    assert select_kernel(node, CPU).exec_type == "host_ref"
