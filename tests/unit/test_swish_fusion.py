"""SwishFusion: x * sigmoid(x) -> Swish(x), which then fuses into the convolution that makes x."""

from __future__ import annotations

import numpy as np

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.transformations.swish_fusion import SwishFusion

RNG = np.random.default_rng(6)


def conv(x):
    w = (RNG.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32)
    return ops.convolution(x, ops.constant(w), [1, 1], [1, 1], [1, 1], [1, 1], name="conv")


def types(m):
    return [n.type_name for n in m.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


def test_silu_becomes_swish_and_fuses_into_the_convolution():
    x = ops.parameter([1, 4, 10, 10], ov.Type.f32, name="x")
    c = conv(x)
    y = ops.multiply(ops.sigmoid(c), c, name="silu")  # sigmoid first: either order matches
    y.output(0).set_names({"act"})
    model = ov.Model([y], [x])
    data = RNG.standard_normal((1, 4, 10, 10)).astype(np.float32)
    want = run_reference(model, [data])[0]
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert [n.type_name for n in compiled.get_runtime_model().get_ordered_ops()
            if n.type_name not in ("Parameter", "Constant", "Result")] == ["FusedConvolution"]
    np.testing.assert_allclose(compiled({0: data})[0], want, rtol=1e-5, atol=1e-5)
    m = ov.Model([ops.multiply(c, ops.sigmoid(c))], [x])
    assert SwishFusion()(m).modified and types(m) == ["Convolution", "Swish"]


def test_a_sigmoid_read_elsewhere_stays():
    x = ops.parameter([1, 4, 10, 10], ov.Type.f32)
    c = conv(x)
    s = ops.sigmoid(c)
    m = ov.Model([ops.multiply(c, s), ops.relu(s)], [x])
    assert SwishFusion()(m).modified
    assert sorted(types(m)) == ["Convolution", "Relu", "Sigmoid", "Swish"]


def test_other_products_are_left_alone():
    x = ops.parameter([1, 4, 10, 10], ov.Type.f32)
    y = ops.parameter([1, 4, 10, 10], ov.Type.f32)
    m = ov.Model([ops.multiply(x, ops.sigmoid(y)), ops.multiply(ops.sigmoid(x), ops.sigmoid(x))], [x, y])
    assert not SwishFusion()(m).modified
