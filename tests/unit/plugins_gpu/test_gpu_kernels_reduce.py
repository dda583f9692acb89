"""GPU reductions, TopK, cumulative ops, ShapeOf, Range and NonZero against the NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU, check, const, param, rand
from vinerun.ir.types import Type
from vinerun.ops import cumulative, reduction, sequence_gen, shape_of, topk_unique
from vinerun.plugins.gpu.kernels import select_kernel

TOL = {"f32": dict(rtol=1e-5, atol=1e-5), "f16": dict(rtol=2e-3, atol=2e-3)}
NAMES = ["ReduceSum", "ReduceMean", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2"]


@pytest.mark.parametrize("axes", [[1], [0, -1], []])
@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("et", ["f32", "f16", "i32", "i8"])
@pytest.mark.parametrize("name", NAMES)
def test_reductions(name, et, keep, axes):
    if name == "ReduceL2" and et in ("i32", "i8"):
        return
    x = rand(et, [3, 4, 5], 0, -2, 2)
    node = getattr(reduction, name)(param(et, [3, 4, 5]), const(axes), keep_dims=keep)
    check(node, [x, np.array(axes, np.int64)], **TOL.get(et, {}))


def test_reductions_empty_axis_and_logical():
    x = np.zeros((2, 0, 3), np.float32)
    for name in ("ReduceMax", "ReduceMin", "ReduceSum"):
        check(getattr(reduction, name)(param("f32", [2, 0, 3]), const([1])), [x, np.array([1])])
    b = rand("boolean", [3, 4])
    for name in ("ReduceLogicalAnd", "ReduceLogicalOr", "ReduceMax", "ReduceMin"):
        check(getattr(reduction, name)(param("boolean", [3, 4]), const([1]), keep_dims=True), [b, np.array([1])])


@pytest.mark.parametrize("sort", ["value", "index", "none"])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("et", ["f32", "i32"])
def test_topk_ties_and_nan(et, mode, sort):
    x = np.round(rand(et, [3, 7], 0, -2, 2)).astype(rand(et, [1]).dtype)
    if et == "f32":
        x[0, [1, 4]] = np.nan
    node = topk_unique.TopK(param(et, [3, 7]), const(4), axis=-1, mode=mode, sort=sort,
                            index_element_type=Type.i64)
    check(node, [x, np.array(4)])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("et", ["f32", "i64"])
def test_cumsum(exclusive, reverse, et):
    x = rand(et, [3, 5])
    node = cumulative.CumSum(param(et, [3, 5]), const(-1), exclusive=exclusive, reverse=reverse)
    check(node, [x, np.array(-1)], **TOL.get(et, {}))
    check(cumulative.CumProd(param(et, [3, 5]), const(0), exclusive=exclusive, reverse=reverse),
          [x, np.array(0)], **TOL.get(et, {}))


def test_shape_of_range_nonzero():
    x = rand("f32", [2, 3])
    check(shape_of.ShapeOf(param("f32", [2, 3]), output_type=Type.i32), [x])
    node = shape_of.ShapeOf(param("f32", [-1, 3]))
    assert select_kernel(node, CPU).host
    check(node, [x])
    check(sequence_gen.Range(const(1.5, np.float32), const(7, np.float32), const(0.7, np.float32),
                             output_type=Type.f32), [np.float32(1.5), np.float32(7), np.float32(0.7)])
    node = sequence_gen.Range(param("i32", []), param("i32", []), param("i32", []), output_type=Type.i32)
    check(node, [np.int32(10), np.int32(-3), np.int32(-4)])
    x[0, 1] = 0
    check(topk_unique.NonZero(param("f32", [2, 3]), output_type=Type.i32), [x])
