"""oneDNN eltwise activations: each op against the reference and against the kernel it wraps, channels-last
inputs, bf16, a convolution -> activation -> convolution chain kept in one native segment, and the shapes
that keep the old kernel."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops import activations as act
from vinerun.ops import unary_math as um
from vinerun.ops.arithmetic import Add, Power
from vinerun.ops.convolution import Convolution
from vinerun.ops.pooling import AvgPool
from vinerun.plugins.cpu.kernels import eltwise_dnnl
from vinerun.plugins.cpu.kernels._dnnl import library

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(21)
BF16 = np.dtype(ml_dtypes.bfloat16)
BIG = (2, 16, 24, 24)  # above eltwise_dnnl.SMALL: oneDNN from Python too


def const(v, dtype):
    return Constant(np.array(v, np.float32).astype(dtype))


# op name -> (node from a parameter and its dtype, input transform, absolute error allowed besides 1e-6 relative;
# None: exact). Measured on 2 * 16 * 24 * 24 normal values times 3, f32, against the reference (f64, rounded once):
# the largest relative errors 2.4e-7 (Sigmoid), 1.2e-7 (Tanh), 2.1e-7 (Exp), 1.1e-7 (x ** 3), 2.6e-7 (Swish),
# 6.4e-7 (Swish, beta 1.5; ATen's 6.0e-7); absolute errors where results near 0: Gelu 9.4e-7 (ATen's too), HSwish
# 5.7e-8 (x = -3), Elu 1.7e-8 (x = 0), HardSigmoid 1.3e-8 (ATen's too)
OPS = {
    "Relu": (lambda p, t: act.Relu(p), None, None),
    "Abs": (lambda p, t: um.Abs(p), None, None),
    "Sqrt": (lambda p, t: um.Sqrt(p), np.abs, None),
    "Clamp": (lambda p, t: act.Clamp(p, min=-0.5, max=0.75), None, None),
    "Square": (lambda p, t: Power(p, const(2.0, t)), None, None),
    "Power3": (lambda p, t: Power(p, const(3.0, t)), None, 1e-12),
    "PowerHalf": (lambda p, t: Power(p, const(0.5, t)), np.abs, 1e-12),
    "Sigmoid": (lambda p, t: act.Sigmoid(p), None, 1e-12),
    "Tanh": (lambda p, t: act.Tanh(p), None, 1e-12),
    "Exp": (lambda p, t: um.Exp(p), None, 1e-12),
    "Elu": (lambda p, t: act.Elu(p, alpha=0.7), None, 3e-8),
    "GeluErf": (lambda p, t: act.Gelu(p, approximation_mode="ERF"), None, 1e-6),
    "GeluTanh": (lambda p, t: act.Gelu(p, approximation_mode="TANH"), None, 2e-7),
    "Swish": (lambda p, t: act.Swish(p), None, 1e-12),
    "SwishBeta": (lambda p, t: act.Swish(p, const(1.5, t)), None, 1e-12),
    "HSwish": (lambda p, t: act.HSwish(p), None, 1e-7),
    "HardSigmoid": (lambda p, t: act.HardSigmoid(p, const(0.2, t), const(0.5, t)), None, 2e-8),
}


def data(name: str, shape, dtype=np.float32) -> np.ndarray:
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    transform = OPS[name][1]
    return (x if transform is None else transform(x)).astype(np.float32).astype(dtype)


def model_of(name: str, shape, dtype=np.float32) -> Model:
    p = Parameter(dtype, list(shape))
    return Model([OPS[name][0](p, dtype)], [p])


def old_kernel(model: Model, monkeypatch) -> ov.CompiledModel:
    """``model`` compiled with the kernels the oneDNN path wraps."""
    with monkeypatch.context() as m:
        m.setattr(eltwise_dnnl, "library", lambda: None)
        return ov.Core().compile_model(model, "CPU", F32)


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in f32 ulps."""
    ia, ib = a.astype(np.float32).view(np.int32).astype(np.int64), b.astype(np.float32).view(np.int32).astype(np.int64)
    ia, ib = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia), np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return int(np.abs(ia - ib).max())


@pytest.mark.parametrize("name", sorted(OPS))
def test_f32_matches_the_reference_and_the_wrapped_kernel(name, monkeypatch):
    model, x = model_of(name, BIG), data(name, BIG)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    assert compiled._impl.plan.steps[0].kernel.exec_type.startswith("onednn_")
    got = compiled.create_infer_request().infer([x])[0]
    want = run_reference(model, [x])[0]
    before = old_kernel(model, monkeypatch).create_infer_request().infer([x])[0]
    atol = OPS[name][2]
    if atol is None:  # exact (ATen's sqrt and x ** 2 are not: an ulp off)
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=atol)
        np.testing.assert_allclose(got, before, rtol=1e-6, atol=atol)


@pytest.mark.parametrize("name", ["Relu", "Sigmoid", "Tanh", "GeluErf", "Square", "Clamp"])
def test_bf16(name):
    model, x = model_of(name, BIG, BF16), data(name, BIG, BF16)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer([x])[0]
    assert got.dtype == BF16 and compiled._impl.plan.steps[0].kernel.exec_type.startswith("onednn_")
    want = run_reference(model, [x])[0]
    # results within 1e-6 of the exact ones, rounded to bf16: at most a bf16 ulp (2^-8 relative) apart, two
    # where Gelu's absolute error nears a small result's rounding boundary
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2 ** -7, atol=1e-6)


def test_channels_last_and_strided_inputs_from_python():
    """A C-contiguous output from another layout: oneDNN's eltwise writes only its source's layout, so the
    wrapped kernel computes it (within ulps of oneDNN's)."""
    model = model_of("Sigmoid", BIG)
    request = ov.Core().compile_model(model, "CPU", F32).create_infer_request()
    x = data("Sigmoid", BIG)
    cl = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    want = request.infer([x])[0]
    for arr in (cl, np.asfortranarray(x)):
        got = request.infer([arr])[0]
        assert got.flags.c_contiguous
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


SAME = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}


def conv_act_conv(name: str, side_branch: bool) -> Model:
    """conv -> activation -> conv -> global pool; with ``side_branch`` the first conv's output also feeds a third
    conv added to the second (so the activation cannot be fused into the first conv)."""
    x = Parameter(Type.f32, [1, 8, 24, 24])
    y = Convolution(x, Constant(RNG.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2), **SAME)
    a = OPS[name][0](y, np.float32)
    z = Convolution(a, Constant(RNG.standard_normal((8, 16, 3, 3)).astype(np.float32) * 0.2), **SAME)
    if side_branch:
        z = Add(z, Convolution(y, Constant(RNG.standard_normal((8, 16, 3, 3)).astype(np.float32) * 0.2), **SAME))
    # a global pool last: a convolution or pool that hands out an NCHW model output runs from Python
    return Model([AvgPool(z, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[24, 24])], [x])


@pytest.mark.parametrize(("name", "side_branch"), [("Sigmoid", True), ("Tanh", True), ("GeluErf", True),
                                                   ("Abs", False), ("Exp", False)])
def test_a_conv_activation_conv_chain_is_one_segment(name, side_branch, monkeypatch):
    """The activation reads the convolution's channels-last output and writes channels-last for the next one;
    the Python steps (oneDNN too at this size) give the same bits."""
    x = RNG.standard_normal((1, 8, 24, 24)).astype(np.float32)
    seg, _ = check_one_segment(conv_act_conv(name, side_branch), x, monkeypatch, OPS[name][0](
        Parameter(Type.f32, [1]), np.float32).type_name, tolerance=1e-4)
    assert sum(s.node.type_name == "Convolution" or s.node.type_name == "FusedConvolution" for s in seg.steps) >= 2


@pytest.mark.parametrize("name", ["Relu", "Sigmoid", "Tanh", "Sqrt", "Square", "GeluErf", "HSwish", "SwishBeta"])
def test_small_arrays_from_python_and_in_a_segment(name, monkeypatch):
    """[1, 128]: the given kernel from Python (oneDNN on one thread for Gelu), oneDNN in a segment: the same bits
    for the exact ops and Gelu, within a few ulps for the others."""
    p = Parameter(Type.f32, [1, 128])
    mid = OPS[name][0](p, np.float32)
    model = Model([Power(mid, const(2.0, np.float32)) if name != "Square" else act.Relu(mid)], [p])
    x = data(name, (1, 128))
    plan = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    (seg,) = plan.items
    kinds = [s.kernel.exec_type for s in seg.steps]
    assert kinds[0].startswith("onednn_") == (name == "GeluErf") and not kinds[1].startswith("onednn_")
    got = plan.run([x])[0]
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")
    python = ov.Core().compile_model(model, "CPU", F32)._impl.plan.run([x])[0]
    if OPS[name][2] is None or name == "GeluErf":
        np.testing.assert_array_equal(python, got)
    else:
        np.testing.assert_allclose(got, python, rtol=3e-6, atol=1e-9)  # squared: twice the activations' errors
    np.testing.assert_allclose(got, run_reference(model, [x])[0], rtol=1e-5, atol=1e-6)


def test_dynamic_shapes_keep_the_old_kernel():
    p = Parameter(Type.f32, PartialShape([Dimension.dynamic(), 16, 24, 24]))
    model = Model([act.Sigmoid(p)], [p])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    step = compiled._impl.plan.steps[0]
    assert step.kernel.exec_type == "aten_sigmoid" and step.kernel.native is None
    x = data("Sigmoid", BIG)
    np.testing.assert_allclose(compiled.create_infer_request().infer([x])[0], run_reference(model, [x])[0],
                               rtol=1e-6, atol=1e-7)


def test_non_constant_parameters_keep_the_old_kernel():
    p, e = Parameter(Type.f32, list(BIG)), Parameter(Type.f32, [])
    compiled = ov.Core().compile_model(Model([Power(p, e)], [p, e]), "CPU", F32)
    assert compiled._impl.plan.steps[0].kernel.exec_type == "aten_pow"


def test_numpy_sigmoid_of_small_arrays():
    """The small-array path of dynamic shapes: within 3 ulps of the exact sigmoid where it is a normal number,
    0 below."""
    p = Parameter(Type.f32, PartialShape([1, Dimension.dynamic()]))
    model = Model([act.Sigmoid(p)], [p])
    x = np.linspace(-100, 30, 1000, dtype=np.float32)[None]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    assert compiled._impl.plan.steps[0].kernel.exec_type == "aten_sigmoid"
    got = compiled.create_infer_request().infer([x])[0]
    exact = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    normal = exact > np.finfo(np.float32).tiny
    assert ulps(got[normal], exact[normal]) <= 3
    assert np.all(got[~normal] < 1e-37) and not np.isnan(got).any()
    assert math.isclose(float(got[0, -1]), 1.0)
