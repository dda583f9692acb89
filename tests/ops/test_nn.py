"""Convolution, pooling and normalization: shape inference, hand-checked references, CPU kernels."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.conv_backprop import ConvolutionBackpropData, GroupConvolutionBackpropData
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.deformable_conv import DeformableConvolution
from vinerun.ops.normalization import LRN, MVN, BatchNormInference, GroupNormalization, NormalizeL2
from vinerun.ops.normalization_onnx import BatchNormalization, LayerNormalization, RMSNormalization
from vinerun.ops.pooling import AvgPool, AvgPool14, MaxPool, MaxPool14
from vinerun.ops.pooling_onnx import AveragePool, LpPool, MaxUnpool
from vinerun.plugins.cpu.kernels import select_kernel

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
TOL = {np.float32: 1e-4, np.float64: 1e-10, np.float16: 1e-2, ml_dtypes.bfloat16: 6e-2}


def p(shape, et=Type.f32):
    return Parameter(et, shape).output(0)


def axes(*values):
    return Constant(np.array(values, np.int64)).output(0)


def shape_of(node, i=0):
    return node.get_output_partial_shape(i)


# --- shape inference ----------------------------------------------------------------------------
def test_convolution_shapes():
    conv = Convolution(p([1, 3, 5, 5]), p([4, 3, 3, 3]), strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1])
    assert shape_of(conv) == PartialShape([1, 4, 3, 3])
    same = Convolution(p([1, 1, 5, 5]), p([1, 1, 3, 3]), strides=[2, 2], auto_pad="same_upper")
    assert shape_of(same) == PartialShape([1, 1, 3, 3])
    dyn = Convolution(p([-1, 3, -1, 7]), p([4, 3, 3, 3]), dilations=[2, 2])
    assert shape_of(dyn) == PartialShape([-1, 4, -1, 3])
    grouped = GroupConvolution(p([1, 4, 5, 5]), p([2, 3, 2, 3, 3]))
    assert shape_of(grouped) == PartialShape([1, 6, 3, 3])


def test_convolution_rejects_channel_mismatch():
    with pytest.raises(ValidationError, match="channels"):
        Convolution(p([1, 3, 5, 5]), p([4, 2, 3, 3]))


def test_backprop_shapes():
    x, w = p([1, 2, 3, 3]), p([2, 4, 3, 3])
    assert shape_of(ConvolutionBackpropData(x, w, strides=[2, 2])) == PartialShape([1, 4, 7, 7])
    assert shape_of(ConvolutionBackpropData(x, w, strides=[2, 2], output_padding=[1, 1])) == PartialShape([1, 4, 8, 8])
    assert shape_of(ConvolutionBackpropData(x, w, axes(9, 9), strides=[2, 2])) == PartialShape([1, 4, 9, 9])
    grouped = GroupConvolutionBackpropData(p([1, 4, 3]), p([2, 2, 3, 2]), strides=[1])
    assert shape_of(grouped) == PartialShape([1, 6, 4])


def test_pool_rounding_shapes():
    x = p([1, 1, 4, 4])
    geometry = {"kernel": [2, 2], "strides": [2, 2], "pads_begin": [0, 0], "pads_end": [1, 1]}
    assert shape_of(MaxPool(x, rounding_type="floor", **geometry)) == PartialShape([1, 1, 2, 2])
    assert shape_of(MaxPool(x, rounding_type="ceil", **geometry)) == PartialShape([1, 1, 3, 3])
    assert shape_of(MaxPool14(x, rounding_type="ceil_torch", **geometry)) == PartialShape([1, 1, 2, 2])
    assert shape_of(MaxPool(x, kernel=[2, 2]), 1) == PartialShape([1, 1, 3, 3])
    assert MaxPool(x, kernel=[2, 2]).get_output_element_type(1) == Type.i64
    with pytest.raises(ValidationError, match="rounding_type"):
        AvgPool(x, kernel=[2, 2], rounding_type="ceil_torch")


def test_layer_norm_stat_shapes():
    ln = LayerNormalization(p([2, 3, 4]), p([3, 4]), axis=1)
    assert shape_of(ln) == PartialShape([2, 3, 4])
    assert shape_of(ln, 1) == PartialShape([2, 1, 1])
    assert ln.get_output_element_type(2) == Type.f32


# --- hand-checked references ----------------------------------------------------------------------
def test_conv_1d_reference():
    x = np.array([[[1, 2, 3, 4]]], np.float32)
    w = np.array([[[1, 1]]], np.float32)
    conv = Convolution(p([1, 1, 4]), p([1, 1, 2]), pads_begin=[1], pads_end=[0])
    np.testing.assert_array_equal(conv.evaluate([x, w])[0], [[[1, 3, 5, 7]]])


def test_depthwise_reference():
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    w = np.array([1, -1], np.float32).reshape(2, 1, 1, 1)
    conv = GroupConvolution(p([1, 2, 4]), p([2, 1, 1, 1]))
    np.testing.assert_array_equal(conv.evaluate([x, w])[0], x * np.array([1, -1]).reshape(1, 2, 1))


def test_conv_transpose_reference():
    x = np.array([[[1, 2]]], np.float32)
    w = np.ones((1, 1, 3), np.float32)
    full = ConvolutionBackpropData(p([1, 1, 2]), p([1, 1, 3]), strides=[2])
    np.testing.assert_array_equal(full.evaluate([x, w])[0], [[[1, 1, 3, 2, 2]]])
    cropped = ConvolutionBackpropData(p([1, 1, 2]), p([1, 1, 3]), strides=[2], pads_begin=[1], pads_end=[0],
                                      output_padding=[1])
    np.testing.assert_array_equal(cropped.evaluate([x, w])[0], [[[1, 3, 2, 2, 0]]])


def test_deformable_with_zero_offsets_is_convolution():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 4, 5, 5)).astype(np.float32), rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    offsets = np.zeros((1, 2 * 9 * 2, 5, 5), np.float32)
    attrs = {"pads_begin": [1, 1], "pads_end": [1, 1]}
    deform = DeformableConvolution(p(x.shape), p(offsets.shape), p(w.shape), group=2, deformable_group=2, **attrs)
    conv = GroupConvolution(p(x.shape), p([2, 3, 2, 3, 3]), **attrs)
    want = conv.evaluate([x, w.reshape(2, 3, 2, 3, 3)])[0]
    np.testing.assert_allclose(deform.evaluate([x, offsets, w])[0], want, rtol=1e-5, atol=1e-5)


def test_deformable_half_pixel_offset_interpolates():
    x = np.array([[[[0, 2], [4, 6]]]], np.float32)
    w = np.ones((1, 1, 1, 1), np.float32)
    offsets = np.full((1, 2, 1, 1), 0.5, np.float32)  # sample (0.5, 0.5): mean of the four pixels
    node = DeformableConvolution(p(x.shape), p(offsets.shape), p(w.shape), strides=[2, 2])
    np.testing.assert_allclose(node.evaluate([x, offsets, w])[0], [[[[3.0]]]])


def test_max_pool_values_and_indices():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    values, idx = MaxPool(p(x.shape), kernel=[2, 2], strides=[2, 2]).evaluate([x])
    np.testing.assert_array_equal(values, [[[[5, 7], [13, 15]]]])
    np.testing.assert_array_equal(idx, [[[[5, 7], [13, 15]]]])
    assert idx.dtype == np.int64
    x2 = np.concatenate([x, x], axis=1)
    _, idx2 = MaxPool(p(x2.shape), kernel=[2, 2], strides=[2, 2], axis=1).evaluate([x2])
    np.testing.assert_array_equal(idx2[0, 1], [[21, 23], [29, 31]])


def test_avg_pool_pad_counting():
    x = np.ones((1, 1, 2, 2), np.float32)
    geometry = {"kernel": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1]}
    inc = AvgPool(p(x.shape), exclude_pad=False, **geometry).evaluate([x])[0]
    exc = AvgPool(p(x.shape), exclude_pad=True, **geometry).evaluate([x])[0]
    np.testing.assert_allclose(inc[0, 0], [[0.25, 0.5, 0.25], [0.5, 1, 0.5], [0.25, 0.5, 0.25]])
    np.testing.assert_allclose(exc, np.ones((1, 1, 3, 3)))


def test_dilated_average_and_lp_pool():
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    avg = AveragePool(p(x.shape), kernel=[2], dilations=[2]).evaluate([x])[0]
    np.testing.assert_allclose(avg, [[[1, 2, 3]]])
    lp = LpPool(p(x.shape), kernel=[2], strides=[2], p=2).evaluate([x])[0]
    np.testing.assert_allclose(lp, [[[1, np.sqrt(13)]]], rtol=1e-6)


def test_max_unpool_inverts_max_pool():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    values, idx = MaxPool(p(x.shape), kernel=[2, 2], strides=[2, 2]).evaluate([x])
    node = MaxUnpool(p(values.shape), p(idx.shape, Type.i64), kernel=[2, 2], strides=[2, 2])
    assert shape_of(node) == PartialShape([1, 1, 4, 4])
    out = node.evaluate([values, idx])[0]
    np.testing.assert_array_equal(out, np.where(np.isin(x, values), x, 0))


def test_batch_norm_and_training_mode():
    x = np.array([[[1.0, 3.0]], [[5.0, 7.0]]], np.float32)  # N=2, C=1
    one = np.ones(1, np.float32)
    y = BatchNormInference(p(x.shape), p([1]), p([1]), p([1]), p([1]), epsilon=0.0).evaluate(
        [x, 2 * one, one, 4 * one, 4 * one])[0]
    np.testing.assert_allclose(y, (x - 4) / 2 * 2 + 1)
    train = BatchNormalization(p(x.shape), p([1]), p([1]), p([1]), p([1]), epsilon=0.0, momentum=0.5)
    y, mean, var = train.evaluate([x, one, 0 * one, 0 * one, one])
    np.testing.assert_allclose(mean, [2.0])  # 0.5 * 0 + 0.5 * 4
    np.testing.assert_allclose(var, [3.0])  # 0.5 * 1 + 0.5 * 5
    np.testing.assert_allclose(y, (x - 4) / np.sqrt(5), rtol=1e-6)


def test_mvn_modes():
    x = np.array([[1.0, 3.0]], np.float32)
    inside = MVN(p(x.shape), axes(1), eps=1.0, eps_mode="inside_sqrt").evaluate([x, np.array([1])])[0]
    outside = MVN(p(x.shape), axes(1), eps=1.0, eps_mode="outside_sqrt").evaluate([x, np.array([1])])[0]
    np.testing.assert_allclose(inside, [[-1 / np.sqrt(2), 1 / np.sqrt(2)]], rtol=1e-6)
    np.testing.assert_allclose(outside, [[-0.5, 0.5]])


def test_lrn_matches_loop():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 6, 3)).astype(np.float32)
    size, alpha, beta, bias = 4, 1e-2, 0.75, 2.0
    got = LRN(p(x.shape), axes(1), alpha=alpha, beta=beta, bias=bias, size=size).evaluate([x, np.array([1])])[0]
    want = np.empty_like(x)
    for c in range(6):
        lo, hi = max(0, c - 1), min(5, c + 1)  # size 4: one neighbour each side, as OpenVINO
        sq = np.sum(x[:, lo:hi + 1] ** 2, axis=1)
        want[:, c] = x[:, c] / (bias + alpha / size * sq) ** beta
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_normalize_l2_and_rms():
    x = np.array([[3.0, 4.0]], np.float32)
    y = NormalizeL2(p(x.shape), axes(1), eps=1e-12).evaluate([x, np.array([1])])[0]
    np.testing.assert_allclose(y, [[0.6, 0.8]], rtol=1e-6)
    rms = RMSNormalization(p(x.shape), p([2]), epsilon=0.0).evaluate([x, np.array([1, 2], np.float32)])[0]
    np.testing.assert_allclose(rms, [[3 / np.sqrt(12.5), 8 / np.sqrt(12.5)]], rtol=1e-6)


def test_group_norm_reference():
    x = np.array([[1.0, 3.0, 10.0, 30.0]], np.float32).reshape(1, 4, 1)
    gn = GroupNormalization(p(x.shape), p([4]), p([4]), num_groups=2, epsilon=0.0)
    y = gn.evaluate([x, np.ones(4, np.float32), np.zeros(4, np.float32)])[0]
    np.testing.assert_allclose(y.reshape(-1), [-1, 1, -1, 1], rtol=1e-6)


# --- CPU kernels against the references, per dtype ------------------------------------------------
def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def check_kernel(node, inputs, dtype):
    kernel = select_kernel(node)
    assert kernel.exec_type != "ref", f"{node.type_name}: no CPU kernel chosen"
    got, want = kernel.fn(inputs), node.evaluate(inputs)
    for g, w in zip(got, want, strict=True):
        if g is None:  # an output nobody reads
            continue
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w)
        else:
            tol = TOL[dtype]
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol * 10)


CONV_CASES = [  # data shape, filters shape, attrs
    ([2, 3, 9], [4, 3, 3], {"strides": [2], "pads_begin": [1], "pads_end": [2]}),
    ([1, 3, 7, 6], [5, 3, 3, 2], {"dilations": [2, 1], "pads_begin": [1, 0], "pads_end": [1, 0]}),
    ([1, 2, 5, 5, 4], [3, 2, 2, 2, 2], {"auto_pad": "same_lower", "strides": [2, 2, 1]}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_convolution_kernel(dtype, case):
    rng = np.random.default_rng(2)
    xs, ws, attrs = case
    et = Type(np.dtype(dtype))
    node = Convolution(p(xs, et), p(ws, et), **attrs)
    check_kernel(node, [rand(rng, xs, dtype), rand(rng, ws, dtype)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_convolution_kernel(dtype):
    rng = np.random.default_rng(3)
    et = Type(np.dtype(dtype))
    node = GroupConvolution(p([1, 4, 6, 6], et), p([4, 1, 1, 3, 3], et), pads_begin=[0, 1], pads_end=[2, 1])
    check_kernel(node, [rand(rng, [1, 4, 6, 6], dtype), rand(rng, [4, 1, 1, 3, 3], dtype)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_backprop_kernels(dtype):
    rng = np.random.default_rng(4)
    et = Type(np.dtype(dtype))
    attrs = {"strides": [2, 1], "pads_begin": [1, 0], "pads_end": [0, 2], "output_padding": [1, 0], "dilations": [1, 2]}
    node = ConvolutionBackpropData(p([1, 2, 3, 4], et), p([2, 3, 3, 3], et), **attrs)
    check_kernel(node, [rand(rng, [1, 2, 3, 4], dtype), rand(rng, [2, 3, 3, 3], dtype)], dtype)
    grouped = GroupConvolutionBackpropData(p([2, 4, 5], et), p([2, 2, 3, 3], et), axes(11), strides=[2])
    check_kernel(grouped, [rand(rng, [2, 4, 5], dtype), rand(rng, [2, 2, 3, 3], dtype), np.array([11])], dtype)


POOL_CASES = [
    {"kernel": [3, 3], "strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1]},
    {"kernel": [2, 3], "pads_begin": [0, 1], "pads_end": [1, 2]},  # asymmetric
    {"kernel": [3, 2], "strides": [2, 2], "rounding_type": "ceil_torch"},
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool_kernel(dtype, case):
    rng = np.random.default_rng(5)
    node = MaxPool14(p([2, 3, 7, 6], Type(np.dtype(dtype))), dilations=[1, 1], **case)
    Result(node.output(1))  # make the indices wanted
    check_kernel(node, [rand(rng, [2, 3, 7, 6], dtype)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exclude", [False, True])
def test_avg_pool_kernel(dtype, exclude):
    rng = np.random.default_rng(6)
    node = AvgPool14(p([1, 2, 7, 6], Type(np.dtype(dtype))), exclude_pad=exclude, kernel=[3, 3], strides=[2, 2],
                     pads_begin=[1, 1], pads_end=[1, 1], rounding_type="ceil_torch")
    check_kernel(node, [rand(rng, [1, 2, 7, 6], dtype)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_kernels(dtype):
    rng = np.random.default_rng(7)
    et = Type(np.dtype(dtype))
    shape = [2, 4, 3, 5]
    x = rand(rng, shape, dtype)
    vec = [rand(rng, [4], dtype) for _ in range(3)] + [np.abs(rand(rng, [4], dtype)) + 0.5]
    check_kernel(BatchNormInference(p(shape, et), *[p([4], et)] * 4, epsilon=1e-3), [x, *vec], dtype)
    for ax, mode in (([2, 3], "inside_sqrt"), ([1, 3], "outside_sqrt")):
        node = MVN(p(shape, et), axes(*ax), eps=1e-3, eps_mode=mode)
        check_kernel(node, [x, np.array(ax)], dtype)
    check_kernel(GroupNormalization(p(shape, et), p([4], et), p([4], et), num_groups=2, epsilon=1e-3),
                 [x, vec[0], vec[1]], dtype)
    check_kernel(LRN(p(shape, et), axes(1), alpha=1e-2, beta=0.75, bias=1.0, size=3), [x, np.array([1])], dtype)
    check_kernel(NormalizeL2(p(shape, et), axes(1, 2), eps=1e-6), [x, np.array([1, 2])], dtype)
    scale, bias = rand(rng, [3, 5], dtype), rand(rng, [3, 5], dtype)
    check_kernel(LayerNormalization(p(shape, et), p([3, 5], et), p([3, 5], et), axis=2), [x, scale, bias], dtype)
    check_kernel(RMSNormalization(p(shape, et), p([3, 5], et), axis=-2), [x, scale], dtype)
