"""GPU convolution and pooling kernels (on torch's CPU device) against the NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import check, const, param, rand
from vinerun.ops.adaptive_pool import AdaptiveAvgPool, AdaptiveMaxPool
from vinerun.ops.conv_backprop import ConvolutionBackpropData, GroupConvolutionBackpropData
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.pooling import AvgPool, AvgPool14, MaxPool, MaxPool1, MaxPool14

TOL = {"f32": (1e-5, 1e-5), "f16": (1e-2, 1e-2)}
SPATIAL = {1: [9], 2: [7, 6], 3: [5, 4, 5]}


def _conv(cls, n: int, filt: list[int], c_in: int, **attrs):
    x = rand("f32", [2, c_in, *SPATIAL[n]], 1)
    w = rand("f32", filt, 2, -1, 1)
    node = cls(param("f32", list(x.shape)), const(w, np.float32), **attrs)
    return node, [x, w]


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("pads", [("explicit", 1, 1), ("explicit", 0, 2), ("explicit", -1, 1), ("same_upper", 0, 0),
                                  ("same_lower", 0, 0), ("valid", 0, 0)])
def test_convolution(n, pads):
    auto_pad, b, e = pads
    node, args = _conv(Convolution, n, [4, 3] + [3] * n, 3, strides=[2] * n, dilations=[1] * n,
                       pads_begin=[b] * n, pads_end=[e] * n, auto_pad=auto_pad)
    check(node, args, *TOL["f32"])
    check(node, args, *TOL["f32"])  # the prepared filters, cached


@pytest.mark.parametrize("n", [1, 2])
def test_group_convolution(n):
    node, args = _conv(GroupConvolution, n, [2, 3, 2] + [3] * n, 4, strides=[1] * n, dilations=[2] * n,
                       pads_begin=[1] * n, pads_end=[2] * n)
    check(node, args, *TOL["f32"])


@pytest.mark.parametrize("output_shape", [None, [9, 8]])
@pytest.mark.parametrize("grouped", [False, True])
def test_convolution_backprop(grouped, output_shape):
    x, w = rand("f32", [1, 4, 4, 3], 1), rand("f32", [2, 2, 3, 3, 3] if grouped else [4, 3, 3, 3], 2)
    cls = GroupConvolutionBackpropData if grouped else ConvolutionBackpropData
    extra = [] if output_shape is None else [const(output_shape)]
    attrs = {"auto_pad": "same_upper"} if output_shape else {"pads_begin": [1, 0], "pads_end": [0, 1],
                                                              "output_padding": [1, 1]}
    node = cls(param("f32", [1, 4, 4, 3]), const(w, np.float32), *extra, strides=[2, 2], **attrs)
    check(node, [x, w] + ([np.asarray(output_shape)] if output_shape else []), *TOL["f32"])


POOL_CASES = [  # (kernel, strides, pads_begin, pads_end, rounding, auto_pad)
    ([3, 3], [2, 2], [1, 1], [1, 1], "floor", "explicit"),
    ([3, 2], [2, 2], [0, 0], [1, 1], "ceil", "explicit"),
    ([2, 2], [2, 2], [0, 0], [0, 0], "ceil_torch", "explicit"),
    ([3, 3], [1, 2], [0, 0], [0, 0], "floor", "same_upper"),
    ([2, 3], [3, 1], [2, 0], [0, 0], "floor", "explicit"),
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_max_pool(case, axis):
    kernel, strides, pb, pe, rounding, auto_pad = case
    node = MaxPool14(param("f32", [2, 3, 7, 6]), kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe,
                     rounding_type=rounding, auto_pad=auto_pad, dilations=[1, 2] if rounding == "floor" else [1, 1],
                     axis=axis)
    check(node, [rand("f32", [2, 3, 7, 6])])


@pytest.mark.parametrize("n", [1, 3])
def test_max_pool_values_only(n):
    node = MaxPool1(param("f16", [1, 2, *SPATIAL[n]]), kernel=[2] * n, strides=[1] * n, pads_begin=[0] * n,
                    pads_end=[1] * n)
    check(node, [rand("f16", [1, 2, *SPATIAL[n]])])
    i32 = MaxPool(param("f32", [1, 2, *SPATIAL[n]]), kernel=[2] * n, strides=[2] * n, index_element_type="i32")
    check(i32, [rand("f32", [1, 2, *SPATIAL[n]])])


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("exclude_pad", [False, True])
def test_avg_pool(case, exclude_pad):
    kernel, strides, pb, pe, rounding, auto_pad = case
    node = AvgPool14(param("f32", [2, 3, 7, 6]), kernel=kernel, strides=strides, pads_begin=pb, pads_end=pe,
                     rounding_type=rounding, auto_pad=auto_pad, exclude_pad=exclude_pad)
    check(node, [rand("f32", [2, 3, 7, 6])], *TOL["f32"])


@pytest.mark.parametrize(("et", "n"), [("f16", 2), ("f32", 3)])  # PyTorch's CPU has no f16 3-D average pooling
def test_avg_pool_exclude_pad(et, n):
    shape = [1, 2, *SPATIAL[n]]
    node = AvgPool(param(et, shape), kernel=[2] * n, strides=[1] * n, pads_begin=[1] * n, pads_end=[1] * n,
                   exclude_pad=True)
    check(node, [rand(et, shape)], *TOL[et])


@pytest.mark.parametrize("sizes", [[3], [3, 2], [2, 3, 2]])
def test_adaptive_pools(sizes):
    shape = [2, 3, *[7, 5, 6][:len(sizes)]]
    x = rand("f32", shape)
    check(AdaptiveAvgPool(param("f32", shape), const(sizes)), [x, np.asarray(sizes)], *TOL["f32"])
    check(AdaptiveMaxPool(param("f32", shape), const(sizes), index_element_type="i32"), [x, np.asarray(sizes)])
