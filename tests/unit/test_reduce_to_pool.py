"""ReduceMeanToPool: spatial ReduceMean of a 4-D tensor -> global AvgPool (+ Squeeze without keep_dims)."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.transformations.reduce_to_pool import ReduceMeanToPool

RNG = np.random.default_rng(4)


def model(shape=(2, 3, 5, 7), axes=(2, 3), keep=True, dtype=np.float32):
    x = ops.parameter(list(shape), ov.Type.f32 if dtype == np.float32 else ov.Type.i32, name="x")
    y = ops.reduce_mean(x, ops.constant(np.array(axes, np.int64)), keep, name="gap")
    y.output(0).set_names({"pooled"})
    return ov.Model([ops.relu(y)], [x], "gap")


def types(m):
    return [n.type_name for n in m.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("axes", [(2, 3), (-1, -2)])
def test_spatial_mean_becomes_a_global_pool_with_the_same_values(keep, axes):
    m = model(axes=axes, keep=keep)
    x = RNG.standard_normal((2, 3, 5, 7)).astype(np.float32)
    want = run_reference(m, [x])[0]
    assert ReduceMeanToPool()(m).modified
    assert types(m) == (["AvgPool", "Relu"] if keep else ["AvgPool", "Squeeze", "Relu"])
    last = next(n for n in m.get_ordered_ops() if n.type_name == ("AvgPool" if keep else "Squeeze"))
    assert last.friendly_name == "gap" and "pooled" in last.output(0).get_names()  # the mean's names go on
    np.testing.assert_allclose(run_reference(m, [x])[0], want, rtol=1e-6, atol=1e-6)
    compiled = ov.Core().compile_model(model(axes=axes, keep=keep), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    np.testing.assert_allclose(compiled({0: x})[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("shape", "axes", "dtype"), [
    ((2, 3, 5, 7), (1, 2), np.float32),   # not the spatial axes
    ((2, 3, 5, 7), (2,), np.float32),     # one axis
    ((2, 3, 5), (1, 2), np.float32),      # rank 3
    ((2, 3, 5, 7), (2, 3), np.int32),     # integers truncate: not a pooling
])
def test_other_reductions_are_left_alone(shape, axes, dtype):
    m = model(shape, axes, dtype=dtype)
    assert not ReduceMeanToPool()(m).modified
    assert "ReduceMean" in types(m)


def test_dynamic_spatial_size_is_left_alone():
    x = ops.parameter([1, 3, -1, -1], ov.Type.f32)
    m = ov.Model([ops.reduce_mean(x, ops.constant(np.array([2, 3], np.int64)), True)], [x])
    assert not ReduceMeanToPool()(m).modified
