"""HSwishFusion (hard-swish as exporters write it) and LinearFolding (constant scales and shifts, BatchNorm, into
the convolution before them): the fused graph computes what the original did."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.transformations.hswish_fusion import HSwishFusion
from vinerun.transformations.linear_folding import LinearFolding

RNG = np.random.default_rng(11)
SHAPE = [1, 4, 6, 5]


def f32(value):
    return ops.constant(np.array(value, np.float32))


def relu6_plus_3(x):
    return ops.clamp(ops.add(x, f32(3.0)), 0.0, 6.0)


HSWISH_FORMS = {
    "(x*c)/6": lambda x: ops.divide(ops.multiply(x, relu6_plus_3(x)), f32(6.0)),
    "(c*x)*(1/6)": lambda x: ops.multiply(ops.multiply(relu6_plus_3(x), x), f32(1 / 6)),
    "x*(c/6)": lambda x: ops.multiply(x, ops.divide(relu6_plus_3(x), f32(6.0))),
    "(c*(1/6))*x": lambda x: ops.multiply(ops.multiply(relu6_plus_3(x), f32(1 / 6)), x),
    "x*hsigmoid": lambda x: ops.multiply(x, ops.hsigmoid(x)),
    "x*hardsigmoid": lambda x: ops.multiply(ops.hard_sigmoid(x, f32(1 / 6), f32(0.5)), x),
}


def types(m):
    return [n.type_name for n in m.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


def model_of(build, shape=SHAPE):
    x = ops.parameter(shape, ov.Type.f32, name="x")
    return ov.Model([ops.relu(build(x))], [x], "m")


def check(model, transform, modified=True, rtol=1e-5):
    data = (RNG.standard_normal(model.get_parameters()[0].get_output_partial_shape(0).to_shape()) * 4).astype(
        np.float32)
    want = run_reference(model, [data])[0]
    assert transform()(model).modified is modified
    np.testing.assert_allclose(run_reference(model, [data])[0], want, rtol=rtol, atol=1e-5)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    np.testing.assert_allclose(compiled({0: data})[0], want, rtol=1e-4, atol=1e-4)
    return model


@pytest.mark.parametrize("form", sorted(HSWISH_FORMS))
def test_hswish_forms_become_one_hswish(form):
    m = check(model_of(HSWISH_FORMS[form]), HSwishFusion)
    assert types(m) == ["HSwish", "Relu"]


def test_hswish_with_a_shared_intermediate_or_other_constants_stays():
    def shared(x):
        c = relu6_plus_3(x)
        return ops.add(ops.divide(ops.multiply(x, c), f32(6.0)), c)  # the Clamp is read twice

    check(model_of(shared), HSwishFusion, modified=False)
    check(model_of(lambda x: ops.divide(ops.multiply(x, ops.clamp(ops.add(x, f32(2.0)), 0.0, 6.0)), f32(6.0))),
          HSwishFusion, modified=False)


def conv(x, c_out=6, group=False, bias=True):
    if group:
        w = ops.constant(RNG.standard_normal((4, 1, 1, 3, 3)).astype(np.float32))
        y = ops.group_convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
        c_out = 4
    else:
        w = ops.constant(RNG.standard_normal((c_out, 4, 3, 3)).astype(np.float32))
        y = ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
    return ops.add(y, f32(RNG.standard_normal((1, c_out, 1, 1)))) if bias else y


def test_learnable_affine_after_a_convolution_folds_into_it():
    # PP-LCNet: conv (+ bias) -> * a -> + b: one convolution and one bias
    m = check(model_of(lambda x: ops.add(ops.multiply(conv(x), f32([0.7])), f32([0.2]))), LinearFolding)
    assert types(m) == ["Convolution", "Add", "Relu"]


@pytest.mark.parametrize("group", [False, True])
def test_batch_norm_after_a_convolution_folds_into_it(group):
    c = 4 if group else 6

    def build(x):
        params = [RNG.uniform(0.5, 2, c), RNG.standard_normal(c), RNG.standard_normal(c), RNG.uniform(0.1, 1, c)]
        return ops.batch_norm_inference(conv(x, group=group, bias=False), *[f32(p) for p in params], 1e-3)

    m = check(model_of(build), LinearFolding)
    assert types(m) == ["GroupConvolution" if group else "Convolution", "Add", "Relu"]


def test_a_dynamic_feature_map_folds_too():
    """PP-OCR's exports have dynamic batch, height and width (``[?, C, ?, ?]``): a scalar or per-channel constant
    cannot broadcast that larger, so it folds as for a static shape; one with more than 1 along a dynamic axis
    might, and stays."""
    x = ops.parameter([-1, 4, -1, -1], ov.Type.f32, name="x")
    m = ov.Model([ops.relu(ops.add(ops.multiply(conv(x), f32([0.7])), f32([0.2])))], [x], "dynamic")
    data = RNG.standard_normal((2, 4, 6, 5)).astype(np.float32)
    want = run_reference(m, [data])[0]
    assert LinearFolding()(m).modified
    assert types(m) == ["Convolution", "Add", "Relu"]
    np.testing.assert_allclose(run_reference(m, [data])[0], want, rtol=1e-5, atol=1e-5)
    x = ops.parameter([-1, 4, -1, -1], ov.Type.f32, name="x")
    wide = ov.Model([ops.multiply(conv(x, bias=False), f32(RNG.standard_normal((1, 1, 1, 5))))], [x], "wide")
    assert not LinearFolding()(wide).modified


def test_per_channel_scale_folds_but_other_shapes_do_not():
    m = check(model_of(lambda x: ops.multiply(conv(x, bias=False), f32(RNG.standard_normal((1, 6, 1, 1))))),
              LinearFolding)
    assert types(m) == ["Convolution", "Relu"]
    # a scale along the width is not per output channel: it stays a Multiply
    check(model_of(lambda x: ops.multiply(conv(x, bias=False), f32(RNG.standard_normal((1, 1, 1, 5))))),
          LinearFolding, modified=False)


def test_constants_that_broadcast_to_a_bigger_shape_are_left_alone():
    m = model_of(lambda x: ops.multiply(ops.add(x, f32([1.0])), f32(RNG.standard_normal((2, 4, 6, 5)))),
                 shape=SHAPE)
    m = ov.Model([m.get_results()[0].input_value(0)], m.get_parameters())
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    want = run_reference(m, [x])[0]
    assert not LinearFolding()(m).modified
    np.testing.assert_array_equal(run_reference(m, [x])[0], want)


def test_a_scale_read_elsewhere_is_not_folded():
    def build(x):
        y = conv(x, bias=False)
        return ops.add(ops.multiply(y, f32(0.5)), y)  # the convolution's output is read twice

    check(model_of(build), LinearFolding, modified=False)


@pytest.mark.parametrize("spatial", [1, 2])
@pytest.mark.parametrize("act", ["hswish", "relu"])
def test_a_scale_and_shift_after_the_activation_are_a_post_op(spatial, act):
    # PP-LCNet's learnable affine block after the activation, before a padded convolution (it cannot fold into
    # that one): the first convolution takes it as its last post-op, ``y * a + b``
    x = ops.parameter([1, 4, *[9] * spatial], ov.Type.f32, name="x")
    k = [3] * spatial
    y = ops.convolution(x, f32(RNG.standard_normal((6, 4, *k))), [1] * spatial, [1] * spatial, [1] * spatial,
                        [1] * spatial)
    y = getattr(ops, act)(ops.add(y, f32(RNG.standard_normal((1, 6, *[1] * spatial)))))
    y = ops.add(ops.multiply(y, f32([0.6])), f32([-0.25]))
    out = ops.convolution(y, f32(RNG.standard_normal((3, 6, *k))), [1] * spatial, [1] * spatial, [1] * spatial,
                          [1] * spatial)
    model = ov.Model([out], [x])
    data = RNG.standard_normal([1, 4, *[9] * spatial]).astype(np.float32)
    want = run_reference(model, [data])[0]
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    fused = [n.post_ops for n in compiled._impl.model.get_ordered_ops() if n.type_name == "FusedConvolution"]
    assert fused == [f"bias,{act},scale,shift"]
    np.testing.assert_allclose(compiled({0: data})[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("group", [False, True])
def test_a_convolution_over_a_width_of_one_runs_as_1d(group):
    # [N, C, L, 1] with (k, 1) filters: how converters write a 1-D convolution (Keras, the magika classifier)
    from vinerun.transformations.conv_squeeze import ConvWidthOneTo1D

    x = ops.parameter([1, 4, 20, 1], ov.Type.f32, name="x")
    if group:
        y = ops.group_convolution(x, f32(RNG.standard_normal((4, 1, 1, 5, 1))), [2, 1], [2, 0], [1, 0], [1, 1])
    else:
        y = ops.convolution(x, f32(RNG.standard_normal((6, 4, 5, 1))), [1, 1], [2, 0], [2, 0], [2, 1])
    m = check(ov.Model([ops.relu(y)], [x]), ConvWidthOneTo1D)
    assert types(m) == ["Squeeze", "GroupConvolution" if group else "Convolution", "Unsqueeze", "Relu"]
    padded_width = ov.Model([ops.convolution(x, f32(RNG.standard_normal((6, 4, 5, 1))), [1, 1], [2, 1], [2, 1],
                                             [1, 1])], [x])
    assert not ConvWidthOneTo1D()(padded_width).modified


@pytest.mark.parametrize("transpose_b", [False, True])
def test_a_layer_scale_after_a_matmul_and_its_bias_folds_into_the_weights(transpose_b):
    """ConvNeXt's ``gamma * (x @ W + b)`` over the channels (last axis) of an NHWC tensor."""
    w = RNG.standard_normal((7, 5) if transpose_b else (5, 7)).astype(np.float32)

    def block(x):
        y = ops.add(ops.matmul(x, f32(w), False, transpose_b), f32(RNG.standard_normal(7)))
        return ops.multiply(y, f32(RNG.standard_normal(7) * 0.1))

    m = check(model_of(block, shape=[1, 4, 6, 5]), LinearFolding)
    assert types(m) == ["MatMul", "Add", "Relu"]


def test_a_scale_along_another_axis_of_a_matmul_stays():
    w = f32(RNG.standard_normal((5, 7)))
    check(model_of(lambda x: ops.multiply(ops.matmul(x, w, False, False), f32(RNG.standard_normal((6, 1)))),
                   shape=[1, 4, 6, 5]), LinearFolding, modified=False)
