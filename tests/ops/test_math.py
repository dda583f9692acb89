"""Element-wise math: unary functions, arithmetic, activations — inference, references, CPU kernels."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

from tests.ops._onnx_util import run_onnx
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops import activations as act
from vinerun.ops import arithmetic as ar
from vinerun.ops import unary_math as um
from vinerun.plugins.cpu.kernels import select_kernel

FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
TOL = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 2e-3, ml_dtypes.bfloat16: 2e-2}


def _param(shape, et=Type.f32):
    return Parameter(et, shape).output(0)


def _const(value, dtype=np.float32):
    return Constant(np.asarray(value, dtype=dtype)).output(0)


def _ref(node, *inputs):
    """Evaluate ``node`` on ``inputs``; inputs not given are its Constant inputs."""
    values = [np.asarray(v) for v in inputs]
    values += [node.const_input(i) for i in range(len(values), node.get_input_size())]
    return node.evaluate(values)[0]


# --- shape and type inference --------------------------------------------------------------------
def test_unary_keeps_type_and_shape():
    node = um.Sin(_param([2, -1], Type.f16))
    assert node.get_output_element_type(0) == Type.f16
    assert node.get_output_partial_shape(0) == PartialShape([2, -1])


def test_binary_broadcasts_and_rejects_mismatch():
    assert ar.Add(_param([3, 1]), _param([4])).get_output_partial_shape(0) == PartialShape([3, 4])
    with pytest.raises(ValidationError, match="cannot be broadcast"):
        ar.Add(_param([3]), _param([4]))
    with pytest.raises(ValidationError, match="differ"):
        ar.Add(_param([3]), _param([3], Type.i32))


def test_is_tests_output_boolean():
    assert um.IsNaN(_param([2])).get_output_element_type(0) == Type.boolean
    assert um.IsInf(_param([2])).get_output_element_type(0) == Type.boolean


def test_bad_round_mode_is_rejected():
    with pytest.raises(ValidationError, match="mode"):
        um.Round(_param([2]), mode="up")


def test_param_activation_checks_types():
    with pytest.raises(ValidationError, match="type"):
        act.PRelu(_param([2, 3]), _const([1.0], np.float64))
    assert act.PRelu(_param([2, 3]), _const([1, 2, 3])).get_output_partial_shape(0) == PartialShape([2, 3])


# --- references on hand-checked values ----------------------------------------------------------
def test_round_modes():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4], np.float32)
    even = _ref(um.Round(_param([7]), mode="half_to_even"), x)
    away = _ref(um.Round(_param([7]), mode="half_away_from_zero"), x)
    np.testing.assert_array_equal(even, [-2, -2, -0, 0, 2, 2, 2])
    np.testing.assert_array_equal(away, [-3, -2, -1, 1, 2, 3, 2])


def test_unary_math_values():
    x = np.array([0.0, 0.5, 1.0], np.float32)
    np.testing.assert_allclose(_ref(um.Erf(_param([3])), x), [0.0, math.erf(0.5), math.erf(1.0)], rtol=1e-6)
    np.testing.assert_allclose(_ref(um.Atanh(_param([3])), x[:2]), [0.0, math.atanh(0.5)], rtol=1e-6)
    assert _ref(um.Sqrt(_param([3])), x).dtype == np.float32
    np.testing.assert_array_equal(_ref(um.Sign(_param([3], Type.i32)), np.array([-4, 0, 7], np.int32)), [-1, 0, 1])
    np.testing.assert_array_equal(_ref(um.Negative(_param([2], Type.u8)), np.array([1, 0], np.uint8)), [255, 0])


def test_isinf_directions():
    x = np.array([-np.inf, 1.0, np.inf, np.nan], np.float32)
    assert _ref(um.IsInf(_param([4])), x).tolist() == [True, False, True, False]
    assert _ref(um.IsInf(_param([4]), detect_positive=False), x).tolist() == [True, False, False, False]
    assert _ref(um.IsNaN(_param([4])), x).tolist() == [False, False, False, True]


def test_integer_divide_and_mod():
    a = np.array([-7, 7, -7, 7, 5], np.int32)
    b = np.array([2, 2, -2, -2, 0], np.int32)
    node = ar.Divide(_param([5], Type.i32), _param([5], Type.i32), m_pythondiv=False)
    np.testing.assert_array_equal(_ref(node, a, b), [-3, 3, 3, -3, 0])
    node = ar.Divide(_param([5], Type.i32), _param([5], Type.i32))
    np.testing.assert_array_equal(_ref(node, a, b), [-4, 3, 3, -4, 0])
    np.testing.assert_array_equal(_ref(ar.FloorMod(_param([5], Type.i32), _param([5], Type.i32)), a, b),
                                  [1, 1, -1, -1, 0])
    np.testing.assert_array_equal(_ref(ar.Mod(_param([5], Type.i32), _param([5], Type.i32)), a, b),
                                  [-1, 1, -1, 1, 0])


def test_integer_power():
    node = ar.Power(_param([3], Type.i64), _param([3], Type.i64))
    out = _ref(node, np.array([3, 2, 2], np.int64), np.array([39, 2, -1], np.int64))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [3**39, 4, 0])


def test_activation_values():
    x = np.array([-2.0, -0.5, 0.0, 1.0, 4.0], np.float32)
    np.testing.assert_allclose(_ref(act.HSwish(_param([5])), x), x * np.clip(x + 3, 0, 6) / 6, rtol=1e-6)
    np.testing.assert_allclose(_ref(act.Elu(_param([5]), alpha=2.0), x),
                               np.where(x > 0, x, 2.0 * (np.exp(x) - 1)), rtol=1e-6)
    np.testing.assert_allclose(_ref(act.SoftPlus(_param([5])), x), np.log1p(np.exp(x)), rtol=1e-6)
    gelu = _ref(act.Gelu(_param([5])), x)
    np.testing.assert_allclose(gelu, [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x], rtol=1e-6)
    tanh_gelu = _ref(act.Gelu(_param([5]), approximation_mode="TANH"), x)
    np.testing.assert_allclose(tanh_gelu, gelu, atol=1e-3)
    prelu = _ref(act.PRelu(_param([5]), _const(0.1)), x)
    np.testing.assert_allclose(prelu, np.where(x < 0, 0.1 * x, x), rtol=1e-6)
    hs = _ref(act.HardSigmoid(_param([5]), _const(0.2), _const(0.5)), x)
    np.testing.assert_allclose(hs, np.clip(0.2 * x + 0.5, 0, 1), rtol=1e-6)


def test_clamp_integers_round_bounds_inward():
    node = act.Clamp(_param([4], Type.i8), min=-1.5, max=2.5)
    np.testing.assert_array_equal(_ref(node, np.array([-5, -1, 2, 9], np.int8)), [-1, -1, 2, 2])
    node = act.Clamp(_param([2], Type.i8), min=-math.inf, max=math.inf)
    np.testing.assert_array_equal(_ref(node, np.array([-128, 127], np.int8)), [-128, 127])


# --- ONNX translation --------------------------------------------------------------------------
def test_onnx_celu_and_shrink():
    x = np.array([-2.0, -0.3, 0.0, 0.3, 2.0], np.float32)
    (y,) = run_onnx(helper.make_node("Celu", ["x"], ["y"], alpha=2.0), 12, {"x": x})
    np.testing.assert_allclose(y, np.maximum(0, x) + np.minimum(0, 2.0 * (np.exp(x / 2.0) - 1)), rtol=1e-6)
    (y,) = run_onnx(helper.make_node("Shrink", ["x"], ["y"], lambd=0.5, bias=0.1), 9, {"x": x})
    np.testing.assert_allclose(y, [-1.9, 0, 0, 0, 1.9], rtol=1e-6)


def test_onnx_pow_mixed_types_and_mean():
    (y,) = run_onnx(helper.make_node("Pow", ["a", "b"], ["y"]), 15,
                    {"a": np.array([2, 3], np.int32), "b": np.array([3.0, 2.0], np.float32)})
    assert y.dtype == np.int32 and y.tolist() == [8, 9]
    (y,) = run_onnx(helper.make_node("Mean", ["a", "b", "c"], ["y"]), 13,
                    {k: np.array([v], np.float32) for k, v in zip("abc", (1.0, 2.0, 6.0), strict=True)})
    np.testing.assert_allclose(y, [3.0])


def test_onnx_clip_with_runtime_bounds():
    x = np.array([-3, 0, 3], np.int32)
    (y,) = run_onnx(helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), 13,
                    {"x": x, "lo": np.array(-1, np.int32), "hi": np.array(2, np.int32)})
    assert y.tolist() == [-1, 0, 2]


# --- CPU kernels against the references ---------------------------------------------------------
def _random(dtype, shape, lo=-3.0, hi=3.0, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -50), min(info.max, 50), size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def _check_kernel(node, inputs, dtype):
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith(("aten_", "onednn_")), f"{node.type_name} fell back to {kernel.exec_type}"
    got = kernel.fn(inputs)[0]
    want = node.evaluate(inputs)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = TOL.get(dtype, 0)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


# (op, input range) — the range keeps each function in its domain
UNARY = [(um.Abs, (-3, 3)), (um.Negative, (-3, 3)), (um.Exp, (-3, 3)), (um.Log, (0.1, 5)),
         (um.Sqrt, (0, 5)), (um.Erf, (-3, 3)), (um.Floor, (-3, 3)), (um.Ceiling, (-3, 3)), (um.Sign, (-3, 3)),
         (um.Sin, (-3, 3)), (um.Cos, (-3, 3)), (um.Tan, (-1, 1)), (um.Asin, (-0.9, 0.9)),
         (um.Acos, (-0.9, 0.9)), (um.Atan, (-3, 3)), (um.Sinh, (-3, 3)), (um.Cosh, (-3, 3)),
         (um.Asinh, (-3, 3)), (um.Acosh, (1.1, 4)), (um.Atanh, (-0.9, 0.9)), (act.Relu, (-3, 3)),
         (act.Sigmoid, (-6, 6)), (act.Tanh, (-3, 3)), (act.SoftSign, (-3, 3)), (act.Mish, (-3, 3)),
         (act.HSwish, (-5, 5)), (act.SoftPlus, (-5, 25))]


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op,bounds", UNARY, ids=[u[0].type_name for u in UNARY])
def test_unary_kernels(op, bounds, dtype):
    x = _random(dtype, (3, 17), *bounds)
    _check_kernel(op(_param([3, 17], Type(dtype))), [x], dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64], ids=lambda d: np.dtype(d).name)
def test_integer_unary_kernels(dtype):
    x = _random(dtype, (5, 7))
    x.reshape(-1)[0] = np.iinfo(dtype).min  # Abs / Negative wrap there
    for op in (act.Relu, um.Abs, um.Negative, um.Sign):
        _check_kernel(op(_param([5, 7], Type(dtype))), [x], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_parametrized_activation_kernels(dtype):
    et = Type(dtype)
    x = _random(dtype, (2, 3, 4))
    p = _param([2, 3, 4], et)
    _check_kernel(act.Elu(p, alpha=0.7), [x], dtype)
    _check_kernel(act.Gelu(p), [x], dtype)
    _check_kernel(act.Gelu(p, approximation_mode="TANH"), [x], dtype)
    _check_kernel(act.Clamp(p, min=-1.0, max=0.5), [x], dtype)
    _check_kernel(um.Round(p, mode="half_away_from_zero"), [x], dtype)
    slope = _random(dtype, (4,), seed=1)
    _check_kernel(act.PRelu(p, _param([4], et)), [x, slope], dtype)
    alpha, beta = np.asarray(0.2, dtype), np.asarray(0.5, dtype)
    _check_kernel(act.HardSigmoid(p, _param([], et), _param([], et)), [x, alpha, beta], dtype)
    _check_kernel(act.Selu(p, _param([], et), _param([], et)), [x, alpha, beta], dtype)
    _check_kernel(act.Swish(p, _param([], et)), [x, beta], dtype)
    _check_kernel(act.Swish(p), [x], dtype)


BINARY = [ar.Add, ar.Subtract, ar.Multiply, ar.Maximum, ar.Minimum]


@pytest.mark.parametrize("dtype", FLOATS + [np.int8, np.uint8, np.int16, np.int32, np.int64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.type_name)
def test_binary_kernels(op, dtype):
    a, b = _random(dtype, (3, 1, 5)), _random(dtype, (4, 5), seed=1)
    _check_kernel(op(_param([3, 1, 5], Type(dtype)), _param([4, 5], Type(dtype))), [a, b], dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_float_binary_kernels(dtype):
    a, b = _random(dtype, (3, 5), 0.5, 3), _random(dtype, (5,), 0.5, 3, seed=1)
    pa, pb = _param([3, 5], Type(dtype)), _param([5], Type(dtype))
    for op in (ar.Divide, ar.Power, ar.SquaredDifference):
        _check_kernel(op(pa, pb), [a, b], dtype)


def test_integer_divide_uses_the_reference():
    assert select_kernel(ar.Divide(_param([2], Type.i32), _param([2], Type.i32))).exec_type == "ref"
