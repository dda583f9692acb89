"""NanGuardFusion: ``Select(IsNaN(x), c, x)`` (transformers' guard after an attention softmax the attention fusion
does not take) becomes one ReplaceNaN that keeps infinities, computes what the pair did and runs as one CPU step."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.transformations.nan_guard import NanGuardFusion

SHAPE = [2, 3, 5, 5]


def types(m):
    return [n.type_name for n in m.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


def guarded(build):
    x = ops.parameter(SHAPE, ov.Type.f32, name="x")
    p = ops.softmax(x, -1)
    return ov.Model([build(p)], [x], "m")


def data():
    x = np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32)
    x[0, 1, 2, :] = -np.inf  # a fully masked row: its softmax is NaN
    return x


@pytest.mark.parametrize("value", [0.0, -1.5])
def test_the_guard_becomes_one_op_and_computes_the_same(value):
    model = guarded(lambda p: ops.select(ops.is_nan(p), ops.constant(np.float32(value)), p))
    x = data()
    want = run_reference(model, [x])[0]
    assert np.isnan(run_reference(guarded(lambda p: p), [x])[0]).any()  # the data makes NaNs to replace
    assert NanGuardFusion()(model).modified
    assert types(model) == ["Softmax", "ReplaceNaN"]
    np.testing.assert_array_equal(run_reference(model, [x])[0], want)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = compiled({0: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)  # the softmax kernel's last bits are its own
    np.testing.assert_array_equal(got[0, 1, 2], value)  # the masked row: replaced
    assert "aten_nan_to_num" in [s.kernel.exec_type for s in compiled._impl.plan.steps]


def test_infinities_stay():
    x = ops.parameter([4], ov.Type.f32, name="x")
    model = ov.Model([ops.select(ops.is_nan(x), ops.constant(np.float32(0)), x)], [x], "m")
    assert NanGuardFusion()(model).modified
    values = np.array([np.nan, np.inf, -np.inf, 2.0], np.float32)
    got = ov.Core().compile_model(model, "CPU")({0: values})[0]
    np.testing.assert_array_equal(got, [0.0, np.inf, -np.inf, 2.0])


def test_other_selects_stay():
    def shared(p):  # the IsNaN is read twice
        nan = ops.is_nan(p)
        return ops.add(ops.select(nan, ops.constant(np.float32(0)), p), ops.convert(nan, ov.Type.f32))

    for build in (shared,
                  lambda p: ops.select(ops.is_nan(p), p, ops.constant(np.float32(0))),  # branches swapped
                  lambda p: ops.select(ops.is_nan(p), ops.add(p, p), p),  # not a constant
                  lambda p: ops.select(ops.is_nan(p), ops.constant(np.float32(0)), ops.exp(p))):  # another x
        model = guarded(build)
        assert not NanGuardFusion()(model).modified
