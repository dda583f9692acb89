"""Comparisons, boolean logic, Select and bitwise ops: inference, references, CPU kernels."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

from tests.ops._onnx_util import run_onnx
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops import bitwise as bw
from vinerun.ops import comparison as cmp
from vinerun.ops import logical as lg
from vinerun.plugins.cpu.kernels import select_kernel

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8, np.int32, np.int64]


def _param(shape, et=Type.f32):
    return Parameter(et, shape).output(0)


def _ref(node, *inputs):
    return node.evaluate([np.asarray(v) for v in inputs])[0]


def test_comparisons_output_boolean_with_broadcast_shape():
    node = cmp.Less(_param([2, 1]), _param([3]))
    assert node.get_output_element_type(0) == Type.boolean
    assert node.get_output_partial_shape(0) == PartialShape([2, 3])
    out = _ref(node, np.array([[0.0], [5.0]], np.float32), np.array([1.0, 5.0, 6.0], np.float32))
    assert out.dtype == np.bool_ and out.tolist() == [[True, True, True], [False, False, True]]


def test_string_equality():
    node = cmp.Equal(_param([2], Type.string), _param([2], Type.string))
    a, b = np.array(["x", "y"], dtype=object), np.array(["x", "z"], dtype=object)
    assert _ref(node, a, b).tolist() == [True, False]


def test_logical_ops_need_booleans():
    with pytest.raises(ValidationError, match="boolean"):
        lg.LogicalAnd(_param([2]), _param([2]))
    with pytest.raises(ValidationError, match="boolean"):
        lg.LogicalNot(_param([2], Type.i32))
    a, b = np.array([True, True, False]), np.array([True, False, False])
    assert _ref(lg.LogicalXor(_param([3], Type.boolean), _param([3], Type.boolean)), a, b).tolist() == [
        False, True, False]


def test_select_broadcasts_three_ways():
    node = lg.Select(_param([2, 1], Type.boolean), _param([3]), _param([1]))
    assert node.get_output_partial_shape(0) == PartialShape([2, 3])
    out = _ref(node, np.array([[True], [False]]), np.arange(3, dtype=np.float32), np.array([9.0], np.float32))
    assert out.tolist() == [[0, 1, 2], [9, 9, 9]]
    with pytest.raises(ValidationError, match="condition"):
        lg.Select(_param([2]), _param([2]), _param([2]))


def test_bitwise_ops():
    a, b = np.array([12, -1], np.int16), np.array([10, 3], np.int16)
    p = _param([2], Type.i16)
    assert _ref(bw.BitwiseAnd(p, p), a, b).tolist() == [8, 3]
    assert _ref(bw.BitwiseOr(p, p), a, b).tolist() == [14, -1]
    assert _ref(bw.BitwiseXor(p, p), a, b).tolist() == [6, -4]
    assert _ref(bw.BitwiseNot(p), a).tolist() == [-13, 0]
    assert _ref(bw.BitwiseNot(_param([2], Type.boolean)), np.array([True, False])).tolist() == [False, True]
    with pytest.raises(ValidationError, match="integer"):
        bw.BitwiseAnd(_param([2]), _param([2]))


def test_shifts_out_of_range_keep_only_the_sign_fill():
    p = _param([4], Type.i8)
    x = np.array([-8, 4, 64, -1], np.int8)
    s = np.array([1, 9, 1, -1], np.int8)
    assert _ref(bw.BitwiseLeftShift(p, p), x, s).tolist() == [-16, 0, -128, 0]
    assert _ref(bw.BitwiseRightShift(p, p), x, s).tolist() == [-4, 0, 32, -1]
    u = np.array([16, 1], np.uint64)
    assert _ref(bw.BitwiseRightShift(_param([2], Type.u64), _param([2], Type.u64)), u,
                np.array([2, 64], np.uint64)).tolist() == [4, 0]


def test_onnx_bitshift_and_where():
    (y,) = run_onnx(helper.make_node("BitShift", ["x", "s"], ["y"], direction="LEFT"), 11,
                    {"x": np.array([1, 2], np.uint8), "s": np.array([3, 1], np.uint8)})
    assert y.tolist() == [8, 4]
    (y,) = run_onnx(helper.make_node("Where", ["c", "a", "b"], ["y"]), 16,
                    {"c": np.array([True, False]), "a": np.array([1, 2], np.int64), "b": np.array([7], np.int64)})
    assert y.tolist() == [1, 7]


# --- CPU kernels against the references ---------------------------------------------------------
def _random(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 4, size=shape).astype(dtype)
    return rng.integers(-2, 3, size=shape).astype(dtype)  # small integers make ties likely


def _check_kernel(node, inputs):
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith("aten_"), f"{node.type_name} fell back to {kernel.exec_type}"
    got, want = kernel.fn(inputs)[0], node.evaluate(inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


COMPARISONS = [cmp.Equal, cmp.NotEqual, cmp.Less, cmp.LessEqual, cmp.Greater, cmp.GreaterEqual]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_comparison_kernels(dtype):
    a, b = _random(dtype, (3, 1, 4), 0), _random(dtype, (5, 4), 1)
    for op in COMPARISONS:
        _check_kernel(op(_param([3, 1, 4], Type(dtype)), _param([5, 4], Type(dtype))), [a, b])


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_], ids=lambda d: np.dtype(d).name)
def test_select_kernel(dtype):
    cond = np.random.default_rng(2).random((3, 4)) > 0.5
    a, b = _random(dtype, (4,), 0).astype(dtype), _random(dtype, (3, 1), 1).astype(dtype)
    node = lg.Select(_param([3, 4], Type.boolean), _param([4], Type(dtype)), _param([3, 1], Type(dtype)))
    _check_kernel(node, [cond, a, b])


def test_logical_kernels():
    rng = np.random.default_rng(3)
    a, b = rng.random((2, 5)) > 0.5, rng.random((5,)) > 0.5
    pa, pb = _param([2, 5], Type.boolean), _param([5], Type.boolean)
    for op in (lg.LogicalAnd, lg.LogicalOr, lg.LogicalXor):
        _check_kernel(op(pa, pb), [a, b])
    _check_kernel(lg.LogicalNot(pa), [a])
