"""CPU ATen kernels for data movement (Gather, TopK, CumSum) against the ops' NumPy references.

Each kernel runs on random inputs, per dtype.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.types import Type
from vinerun.ops.cumulative import CumSum
from vinerun.ops.gather import Gather
from vinerun.ops.topk_unique import TopK
from vinerun.plugins.cpu.kernels import select_kernel

RNG = np.random.default_rng(7)
ALL = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_]


def rand(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if dtype.kind in "iu":
        return RNG.integers(0, 50, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def check(node, inputs, exec_prefix="aten"):
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith(exec_prefix), kernel.exec_type
    got, want = kernel.fn(inputs), node.evaluate(inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g.astype(np.float64) if g.dtype.kind == "V" else g,
                                      w.astype(np.float64) if w.dtype.kind == "V" else w)


def i64(v):
    return Constant(np.asarray(v, np.int64))


@pytest.mark.parametrize("dtype", ALL)
def test_gather(dtype):
    x = rand((4, 5, 3), dtype)
    idx = RNG.integers(-5, 5, (2, 3))
    node = Gather(Parameter(Type(np.dtype(dtype)), [4, 5, 3]), Parameter(Type.i64, [2, 3]), i64(1))
    check(node, [x, idx, np.array(1)])
    check(node, [x, np.array([[0, 5, -6], [1, 2, 3]]), np.array(1)])  # out of range: the reference's zeros


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.int64])
def test_gather_many_rows(dtype):
    """Past a few rows ATen's index_select runs (NumPy's take below): the same values, out-of-range rows zeros."""
    x = rand((300, 80), dtype)
    node = Gather(Parameter(Type(np.dtype(dtype)), [300, 80]), Parameter(Type.i64, [500]), i64(0))
    check(node, [x, RNG.integers(-300, 300, 500), np.array(0)])
    check(node, [x, RNG.integers(-300, 400, 500), np.array(0)])


TOPK_TYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8, np.int16, np.int32, np.int64]


@pytest.mark.parametrize("dtype", TOPK_TYPES)
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("high", [4, 1000])  # many ties (also across the k-th place), or few
@pytest.mark.parametrize("k", [0, 1, 4, 9])
def test_topk(dtype, mode, high, k):
    x = RNG.integers(0, high, (3, 9, 2)).astype(dtype)
    node = TopK(Parameter(Type(np.dtype(dtype)), [3, 9, 2]), i64(k), axis=1, mode=mode, index_element_type=Type.i64)
    check(node, [x, np.array(k)])


@pytest.mark.parametrize("shape", [(40,), (5, 40), (40, 3, 2), (0, 7)])
@pytest.mark.parametrize("sort", ["value", "index", "none"])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("levels", [0, 3, 30])  # continuous values, or ties inside and across the k-th place
def test_topk_k_read_per_call(shape, sort, mode, levels):
    """k from an input (``min(k, count)`` as detection heads compute it), every sort, any axis."""
    axis = 0 if len(shape) == 3 else -1
    node = TopK(Parameter(Type.f32, [-1] * len(shape)), Parameter(Type.i64, [1]), axis=axis, mode=mode, sort=sort,
                index_element_type=Type.i32)
    x = RNG.standard_normal(shape).astype(np.float32)
    if levels:
        x = np.floor(x * levels / 3).astype(np.float32)
    for k in [0, 1, 7, shape[axis], shape[axis] + 5]:
        check(node, [x, np.array([k])])
    check(node, [x, np.array([-1])], exec_prefix="aten")  # a negative k: the reference's empty result


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64])
@pytest.mark.parametrize("mode", ["max", "min"])
def test_topk_one_row_of_integers(dtype, mode):
    info = np.iinfo(dtype)
    x = np.concatenate([RNG.integers(0, 6, 60), [info.min, info.max, info.min, info.max]]).astype(dtype)
    node = TopK(Parameter(Type(np.dtype(dtype)), [64]), Parameter(Type.i64, []), mode=mode)
    for k in [1, 3, 10, 33, 64]:
        check(node, [x, np.array(k)])


@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("shape", [(10,), (1, 10)])
def test_topk_nan_and_signed_zeros(mode, dtype, shape):
    x = np.array([1.0, np.nan, -0.0, 0.0, 3.0, np.nan, 3.0, -2.0, 0.0, np.nan], dtype).reshape(shape)
    node = TopK(Parameter(Type(np.dtype(dtype)), list(shape)), Parameter(Type.i64, []), mode=mode,
                index_element_type=Type.i64)
    for k in range(11):
        check(node, [x, np.array(k)])
    check(node, [np.where(np.isnan(x.astype(np.float32)), 5.0, x).astype(dtype), np.array(4)])  # no NaN, ties


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(dtype, exclusive, reverse):
    x = rand((3, 5), dtype)
    node = CumSum(Parameter(Type(np.dtype(dtype)), [3, 5]), i64(-1), exclusive=exclusive, reverse=reverse)
    check(node, [x, np.array(-1)])


def test_cumsum_f32_close():
    x = rand((3, 50), np.float32)
    node = CumSum(Parameter(Type.f32, [3, 50]), i64(1))
    got, want = select_kernel(node).fn([x, np.array(1)])[0], node.evaluate([x, np.array(1)])[0]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
