"""Quantization ops, signal windows and the mel filter bank (hand-checked references)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.quantization import DequantizeLinear, DynamicQuantizeLinear, QuantizeLinear, expand_param
from vinerun.ops.windows import BlackmanWindow, HammingWindow, HannWindow, MelWeightMatrix


def param(shape, et=Type.f32):
    return Parameter(et, PartialShape(shape))


def test_quantize_rounds_half_to_even_and_saturates():
    node = QuantizeLinear(param([6]), param([]), param([], Type.u8))
    assert node.get_output_element_type(0) == Type.u8
    x = np.array([0.5, 1.5, 2.5, -10.0, 300.0, 3.0], np.float32)
    y = node.evaluate([x, np.array(1.0, np.float32), np.array(1, np.uint8)])[0]
    np.testing.assert_array_equal(y, [1, 3, 3, 0, 255, 4])
    assert y.dtype == np.uint8


def test_quantize_output_type_without_zero_point():
    node = QuantizeLinear(param([3]), param([]), output_type=Type.i4)
    assert node.get_output_element_type(0) == Type.i4
    y = node.evaluate([np.array([-20.0, 3.0, 20.0], np.float32), np.array(1.0, np.float32)])[0]
    assert y.dtype == np.dtype(ml_dtypes.int4)
    np.testing.assert_array_equal(y.astype(np.int8), [-8, 3, 7])


def test_quantize_float8_saturates():
    node = QuantizeLinear(param([2]), param([]), output_type=Type.f8e4m3)
    y = node.evaluate([np.array([1000.0, -1000.0], np.float32), np.array(1.0, np.float32)])[0]
    np.testing.assert_array_equal(y.astype(np.float32), [448.0, -448.0])


def test_dequantize_per_axis():
    node = DequantizeLinear(param([2, 3], Type.u8), param([3]), param([3], Type.u8), axis=1)
    assert node.get_output_element_type(0) == Type.f32
    x = np.array([[10, 20, 30], [0, 0, 0]], np.uint8)
    y = node.evaluate([x, np.array([1.0, 0.5, 2.0], np.float32), np.array([10, 0, 20], np.uint8)])[0]
    np.testing.assert_allclose(y, [[0, 10, 20], [-10, 0, -40]])


def test_blocked_parameters_expand_along_axis():
    p = np.array([[1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(expand_param(p, (1, 3), axis=1, block_size=2), [[1, 1, 2]])
    with pytest.raises(ValidationError, match="block_size"):
        expand_param(p, (1, 5), axis=1, block_size=2)


def test_dynamic_quantize_linear():
    node = DynamicQuantizeLinear(param([4]))
    assert [node.get_output_element_type(i) for i in range(3)] == [Type.u8, Type.f32, Type.u8]
    y, scale, zp = node.evaluate([np.array([-1.0, 0.0, 1.0, 2.0], np.float32)])
    assert scale.dtype == np.float32 and scale.shape == () and zp.dtype == np.uint8
    np.testing.assert_allclose(scale, 3.0 / 255, rtol=1e-6)
    assert int(zp) == 85
    np.testing.assert_array_equal(y, [0, 85, 170, 255])


def test_windows_hand_checked():
    size = Constant(np.array(4, np.int64))
    np.testing.assert_allclose(HannWindow(size).evaluate([np.array(4)])[0], [0, 0.5, 1, 0.5], atol=1e-7)
    np.testing.assert_allclose(HannWindow(size, periodic=False).evaluate([np.array(3)])[0], [0, 1, 0], atol=1e-7)
    hamming = HammingWindow(size).evaluate([np.array(2)])[0]
    np.testing.assert_allclose(hamming, [4 / 46, 1.0], rtol=1e-6)
    blackman = BlackmanWindow(size, output_type=Type.f64).evaluate([np.array(4)])[0]
    assert blackman.dtype == np.float64
    np.testing.assert_allclose(blackman, [0, 0.34, 1, 0.34], atol=1e-12)
    assert HannWindow(size).get_output_partial_shape(0) == PartialShape([4])


def test_mel_weight_matrix_shape_and_peaks():
    ins = [Constant(np.array(v)) for v in (4, 32, 16000, 0.0, 8000.0)]
    node = MelWeightMatrix(*ins)
    assert node.get_output_partial_shape(0) == PartialShape([17, 4])
    m = node.evaluate([np.array(4), np.array(32), np.array(16000), np.array(0.0), np.array(8000.0)])[0]
    assert m.dtype == np.float32
    assert np.all(m.max(axis=0) == 1.0)  # every filter peaks at 1 on its centre bin
    assert np.all(m >= 0)


def test_fake_quantize_hand_checked():
    from vinerun.ops.fake_quantize import FakeQuantize

    node = FakeQuantize(param([5]), param([]), param([]), param([]), param([]), levels=5)
    assert node.get_output_partial_shape(0) == PartialShape([5])
    x = np.array([-1.0, 0.1, 0.2, 0.9, 2.0], np.float32)
    lims = [np.array(v, np.float32) for v in (0.0, 1.0, 0.0, 4.0)]
    y = node.evaluate([x, *lims])[0]
    np.testing.assert_allclose(y, [0, 0, 1, 4, 4])  # steps of 0.25 mapped onto 0..4
    assert y.dtype == np.float32
