"""PadFusion: a constant spatial Pad folds into the convolution or pooling after it, with the same values;
pads that would change the result stay."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.transformations.pad_fusion import PadFusion

RNG = np.random.default_rng(7)
SHAPE = (1, 4, 9, 8)


def const(values, dtype=np.int64):
    return ops.constant(np.array(values, dtype))


def padded(x, begin=(0, 1), end=(1, 2), value=None, mode="constant"):
    pb, pe = const([0, 0, *begin]), const([0, 0, *end])
    if value is None:
        return ops.pad(x, pb, pe, mode)
    return ops.pad(x, pb, pe, mode, ops.constant(np.array(value, np.float32)))


def conv(x, stride=2, pads=(0, 0), auto_pad="explicit", group=False):
    if group:
        w = ops.constant(RNG.standard_normal((4, 1, 1, 3, 3)).astype(np.float32))
        return ops.group_convolution(x, w, [stride, stride], list(pads), list(pads), [1, 1], auto_pad)
    w = ops.constant(RNG.standard_normal((6, 4, 3, 3)).astype(np.float32))
    return ops.convolution(x, w, [stride, stride], list(pads), list(pads), [1, 1], auto_pad)


def avg_pool(x, exclude_pad=True, pads=(0, 0), rounding="floor"):
    return ops.avg_pool(x, [2, 2], list(pads), list(pads), [3, 3], exclude_pad, rounding)


def max_pool(x, rounding="floor"):
    return ops.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [3, 3], rounding).output(0)  # indices unused


def types(m):
    return [n.type_name for n in m.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


def check(build, folds: bool, negative_input: bool = True):
    """Build a model with ``build(x)``, fold, and compare with the unfolded reference (and the CPU device)."""
    x = ops.parameter(list(SHAPE), ov.Type.f32, name="x")
    m = ov.Model([build(x)], [x], "pads")
    data = RNG.standard_normal(SHAPE).astype(np.float32)
    if not negative_input:
        data = np.abs(data)
    want = run_reference(m, [data])[0]
    assert PadFusion()(m).modified is folds
    assert ("Pad" not in types(m)) is folds
    np.testing.assert_allclose(run_reference(m, [data])[0], want, rtol=1e-5, atol=1e-5)
    compiled = ov.Core().compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    np.testing.assert_allclose(compiled({0: data})[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("group", [False, True])
@pytest.mark.parametrize(("begin", "end"), [((0, 0), (1, 1)), ((1, 1), (1, 1)), ((2, 0), (0, 3))])
def test_convolutions_take_the_pads(group, begin, end):
    check(lambda x: conv(padded(x, begin, end), group=group), folds=True)


def test_pads_add_to_the_convolutions_own_and_valid_becomes_explicit():
    check(lambda x: conv(padded(x), pads=(1, 1)), folds=True)
    check(lambda x: conv(padded(x), auto_pad="valid"), folds=True)


def test_avg_pool_counts_the_folded_pads():
    check(lambda x: avg_pool(padded(x), exclude_pad=True), folds=True)
    check(lambda x: avg_pool(padded(x), exclude_pad=False, pads=(1, 1)), folds=True)


def test_max_pool_folds_minus_infinity_or_zeros_after_relu():
    check(lambda x: max_pool(padded(x, value=-math.inf)), folds=True)
    check(lambda x: max_pool(padded(ops.relu(x))), folds=True)
    check(lambda x: max_pool(padded(ops.clamp(x, 0.0, 6.0))), folds=True)


@pytest.mark.parametrize("build", [
    lambda x: conv(padded(x, value=1.0)),                                   # not zeros
    lambda x: conv(padded(x, mode="reflect")),                              # not constant
    lambda x: avg_pool(ops.pad(x, const([0, 1, 0, 0]), const([0, 0, 1, 1]))),  # pads channels
    lambda x: conv(ops.pad(x, const([0, 0, -1, 0]), const([0, 0, 1, 1]))),  # crops
    lambda x: conv(padded(x), auto_pad="same_upper"),                       # pads depend on the size
    lambda x: avg_pool(padded(x), exclude_pad=True, pads=(1, 1)),           # own pads excluded, new ones counted
    lambda x: avg_pool(padded(x), exclude_pad=False, rounding="ceil"),      # ceil drops windows in the pads
    lambda x: max_pool(padded(x)),                                          # zeros may beat negative values
])
def test_pads_that_change_the_result_stay(build):
    check(build, folds=False)


def test_a_pad_with_another_reader_stays_for_it():
    def build(x):
        p = padded(x)
        return ops.concat([ops.reshape(conv(p), const([-1]), False), ops.reshape(ops.relu(p), const([-1]), False)],
                          0)

    x = ops.parameter(list(SHAPE), ov.Type.f32, name="x")
    m = ov.Model([build(x)], [x], "pads")
    data = RNG.standard_normal(SHAPE).astype(np.float32)
    want = run_reference(m, [data])[0]
    assert PadFusion()(m).modified
    assert types(m).count("Pad") == 1
    conv_node = next(n for n in m.get_ordered_ops() if n.type_name == "Convolution")
    assert conv_node.input_value(0).node.type_name == "Parameter"
    np.testing.assert_allclose(run_reference(m, [data])[0], want, rtol=1e-5, atol=1e-5)


def test_max_pool_indices_in_use_keep_the_pad():
    def build(x):
        pool = ops.max_pool(padded(ops.relu(x)), [2, 2], [1, 1], [0, 0], [0, 0], [3, 3])
        return ops.concat([ops.convert(pool.output(0), ov.Type.f32), ops.convert(pool.output(1), ov.Type.f32)], 1)

    check(build, folds=False)


def test_asymmetric_convolution_runs_on_onednn():
    # a TensorFlow "SAME" stride-2 convolution: the folded pads differ at the two ends
    x = ops.parameter([1, 8, 16, 16], ov.Type.f32, name="x")
    m = ov.Model([ops.relu(conv_8(padded(x, (0, 0), (1, 1))))], [x], "tf_same")
    data = RNG.standard_normal((1, 8, 16, 16)).astype(np.float32)
    want = run_reference(m, [data])[0]
    compiled = ov.Core().compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "PERF_COUNT": True})
    request = compiled.create_infer_request()
    np.testing.assert_allclose(request.infer({0: data})[0], want, rtol=1e-4, atol=1e-4)
    kinds = {p.node_type: p.exec_type for p in request.get_profiling_info()}
    assert "Pad" not in kinds
    assert kinds["FusedConvolution"].startswith("onednn_conv2d["), kinds


def conv_8(x):
    w = ops.constant(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32))
    return ops.convolution(x, w, [2, 2], [0, 0], [0, 0], [1, 1])
