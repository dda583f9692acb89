"""GPU unary kernels (math, rounding, activations, NaN tests, Convert) against the NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU, check, param, rand
from vinerun.ir.types import Type
from vinerun.ops import activations, convert, unary_math
from vinerun.plugins.gpu.kernels import select_kernel

# the references round f64 results once; torch computes in the tensor's type
TOL = {"f32": dict(rtol=2e-6, atol=1e-6), "f16": dict(rtol=2e-3, atol=1e-3)}
MATH = {"Exp": (-4, 4), "Log": (0.01, 9), "Sqrt": (0, 9), "Erf": (-3, 3), "Sin": (-4, 4), "Cos": (-4, 4),
        "Tan": (-1.4, 1.4), "Asin": (-1, 1), "Acos": (-1, 1), "Atan": (-9, 9), "Sinh": (-4, 4), "Cosh": (-4, 4),
        "Asinh": (-9, 9), "Acosh": (1, 9), "Atanh": (-0.99, 0.99)}
ACTIVATIONS = ["Sigmoid", "Tanh", "HSwish", "HSigmoid", "SoftSign", "Mish", "SoftPlus"]


def _node(cls, et, shape=(3, 5), **attrs):
    return cls(param(et, list(shape)), **attrs)


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("name", list(MATH))
def test_float_math(name, et):
    lo, hi = MATH[name]
    check(_node(getattr(unary_math, name), et), [rand(et, [3, 5], 0, lo, hi)], **TOL[et])


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations(name, et):
    check(_node(getattr(activations, name), et), [rand(et, [3, 5], 0, -6, 6)], **TOL[et])


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("attrs", [dict(cls="Elu", alpha=0.7), dict(cls="Gelu", approximation_mode="ERF"),
                                   dict(cls="Gelu", approximation_mode="TANH"), dict(cls="Gelu2")],
                         ids=["elu", "gelu_erf", "gelu_tanh", "gelu2"])
def test_parametrized(attrs, et):
    attrs = dict(attrs)
    cls = getattr(activations, attrs.pop("cls"))
    check(_node(cls, et, **attrs), [rand(et, [3, 5], 0, -5, 5)], **TOL[et])


@pytest.mark.parametrize("et", ["f32", "f16"])
def test_param_activations(et):
    x = rand(et, [2, 3, 4], 0, -5, 5)
    check(activations.PRelu(param(et, [2, 3, 4]), param(et, [4])), [x, rand(et, [4], 1)], **TOL[et])
    check(activations.Selu(param(et, [2, 3, 4]), param(et, []), param(et, [])),
          [x, np.array(1.67, x.dtype), np.array(1.05, x.dtype)], **TOL[et])
    check(activations.HardSigmoid(param(et, [2, 3, 4]), param(et, []), param(et, [])),
          [x, np.array(0.2, x.dtype), np.array(0.5, x.dtype)], **TOL[et])
    check(activations.Swish(param(et, [2, 3, 4]), param(et, [])), [x, np.array(0.75, x.dtype)], **TOL[et])
    check(activations.Swish(param(et, [2, 3, 4])), [x], **TOL[et])


HALVES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 3.7, -3.2, 0.0, -0.0, np.nan, np.inf,
                   8388609.0, -np.inf])


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("name,attrs", [("Floor", {}), ("Ceiling", {}), ("Round", {"mode": "half_to_even"}),
                                        ("Round", {"mode": "half_away_from_zero"})])
def test_rounding_exact(name, attrs, et):
    with np.errstate(over="ignore"):
        x = np.concatenate([HALVES, rand(et, [8], 0, -9, 9).astype(np.float64)]).astype(rand(et, [1]).dtype)
    check(_node(getattr(unary_math, name), et, [x.size], **attrs), [x])


@pytest.mark.parametrize("et", ["i32", "i64", "u8"])
@pytest.mark.parametrize("name", ["Floor", "Ceiling", "Round"])
def test_rounding_integers_is_a_view(name, et):
    node = _node(getattr(unary_math, name), et)
    (out,) = check(node, [rand(et, [3, 5])])
    assert select_kernel(node, CPU).view


@pytest.mark.parametrize("et", ["f32", "f16", "i32", "i64", "i8", "u8"])
@pytest.mark.parametrize("name", ["Abs", "Negative", "Sign", "Relu"])
def test_sign_ops_exact(name, et):
    x = rand(et, [4, 5])
    if et in ("i8",):
        x[0, 0] = -128
    if et in ("f32", "f16"):
        x[0, :3] = [np.nan, -0.0, np.inf]
    cls = getattr(unary_math, name, None) or getattr(activations, name)
    check(_node(cls, et, [4, 5]), [x])


@pytest.mark.parametrize("et", ["f32", "f16", "i32"])
@pytest.mark.parametrize("name,attrs", [("IsNaN", {}), ("IsFinite", {}), ("IsInf", {}),
                                        ("IsInf", {"detect_negative": False}), ("IsInf", {"detect_positive": False}),
                                        ("IsInf", {"detect_negative": False, "detect_positive": False})])
def test_float_tests(name, attrs, et):
    x = rand(et, [8])
    if et != "i32":
        x[:3] = [np.nan, np.inf, -np.inf]
    check(_node(getattr(unary_math, name), et, [8], **attrs), [x])


@pytest.mark.parametrize("et", ["f32", "f16", "i32", "i8", "u8"])
@pytest.mark.parametrize("lo,hi", [(-1.5, 2.5), (0.2, 0.7), (-np.inf, 3.0), (-1000.0, 1000.0)])
def test_clamp(et, lo, hi):
    x = rand(et, [4, 5])
    check(_node(activations.Clamp, et, [4, 5], min=lo, max=hi), [x])


def test_integer_math_runs_on_host():
    assert select_kernel(_node(unary_math.Exp, "i32"), CPU).exec_type == "host_ref"


SPECIAL = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -3e9, 2.9, -2.9, 127.5, -128.7, 255.9, -0.5,
                    9.3e18, -9.3e18, 0.0])
TYPES = ["f32", "f16", "f64", "i8", "u8", "i16", "i32", "i64", "boolean"]


@pytest.mark.parametrize("dst", TYPES + ["bf16"])
@pytest.mark.parametrize("src", TYPES + ["bf16"])
def test_convert(src, dst):
    node = convert.Convert(param(src, [24]), destination_type=Type(dst))
    if src == "f64" and dst in ("f16", "bf16"):
        assert select_kernel(node, CPU).exec_type == "host_ref"
        return
    x = rand(src, [24], 3, -300, 300)
    if src in ("f32", "f16", "f64", "bf16"):
        with np.errstate(over="ignore"):
            x = np.concatenate([SPECIAL.astype(x.dtype), x[:8]])
    check(node, [x])


def test_convert_like_and_same_type_view():
    x = rand("f32", [3, 4], 0, -300, 300)
    check(convert.ConvertLike(param("f32", [3, 4]), param("i8", [1])), [x, np.zeros(1, np.int8)])
    node = convert.Convert(param("f32", [3, 4]), destination_type=Type.f32)
    check(node, [x])
    assert select_kernel(node, CPU).view
