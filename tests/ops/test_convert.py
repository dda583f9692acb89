"""Convert / ConvertLike / Cast / BitCast: conversion rules, ONNX translation, CPU kernels."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.ops._onnx_util import run_onnx
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter
from vinerun.ir.types import Type
from vinerun.ops.convert import BitCast, Cast, Convert, ConvertLike, convert_array
from vinerun.plugins.cpu.kernels import select_kernel

F8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz]


def _param(shape, et=Type.f32):
    return Parameter(et, shape).output(0)


def test_inference():
    node = Convert(_param([2, -1]), destination_type=Type.i8)
    assert node.get_output_element_type(0) == Type.i8
    like = ConvertLike(_param([3]), _param([1], Type.f16))
    assert like.get_output_element_type(0) == Type.f16
    with pytest.raises(ValidationError, match="bit width"):
        BitCast(_param([2]), destination_type=Type.i64)
    with pytest.raises(ValidationError, match="round_mode"):
        Cast(_param([2]), destination_type=Type.f8e8m0, round_mode="sideways")


def test_float_to_int_truncates_and_clamps():
    x = np.array([-1.7, 2.9, 300.0, -300.0, np.nan], np.float32)
    assert convert_array(x, np.int8).tolist() == [-1, 2, 127, -128, 0]
    assert convert_array(x[:2], np.uint8).tolist() == [0, 2]
    big = np.array([np.inf, -np.inf, 9.3e18], np.float32)
    assert convert_array(big, np.int64).tolist() == [2**63 - 1, -(2**63), 2**63 - 1]
    assert convert_array(big, np.uint64).tolist() == [2**64 - 1, 0, int(np.float32(9.3e18))]
    assert convert_array(np.array(-5.5), np.int32).shape == ()


def test_int_to_int_wraps_including_int4():
    assert convert_array(np.array([200, -1], np.int16), np.int8).tolist() == [-56, -1]
    out = convert_array(np.array([-9.0, 8.0, 7.5], np.float32), ml_dtypes.int4)
    assert out.dtype == ml_dtypes.int4 and out.astype(np.int8).tolist() == [7, -8, 7]
    out = convert_array(np.array([-1, 5], np.int32), ml_dtypes.uint2)
    assert out.astype(np.int8).tolist() == [3, 1]


def test_bool_conversions():
    assert convert_array(np.array([0.0, -0.0, 0.1, np.nan]), np.bool_).tolist() == [False, False, True, True]
    assert convert_array(np.array([True, False]), np.float16).tolist() == [1.0, 0.0]


@pytest.mark.parametrize("dtype", F8, ids=lambda d: np.dtype(d).name)
def test_float8_saturates_by_default(dtype):
    big = float(ml_dtypes.finfo(dtype).max)
    x = np.array([1e9, -np.inf, np.nan, 0.5], np.float32)
    out = convert_array(x, dtype).astype(np.float32)
    assert out[0] == big and out[1] == -big and np.isnan(out[2]) and out[3] == 0.5
    raw = convert_array(x, dtype, saturate=False).astype(np.float32)
    assert not np.isfinite(raw[0]) and not np.isfinite(raw[1])


def test_e8m0_rounding_modes():
    x = np.array([0.0, 0.124, 0.25, 1.1, 1.6, np.inf], np.float32)
    up = convert_array(x, ml_dtypes.float8_e8m0fnu).astype(np.float32)
    np.testing.assert_array_equal(up, [2.0**-127, 0.125, 0.25, 2, 2, 2.0**127])
    down = convert_array(x, ml_dtypes.float8_e8m0fnu, round_mode="down").astype(np.float32)
    np.testing.assert_array_equal(down[1:5], [0.0625, 0.25, 1, 1])
    near = convert_array(x, ml_dtypes.float8_e8m0fnu, saturate=False, round_mode="nearest").astype(np.float32)
    assert np.isnan(near[0]) and near[3] == 1 and near[4] == 2 and np.isnan(near[5])


def test_strings():
    parsed = convert_array(np.array(["1e-5", "INF", "-inf", "NaN", "2.5"], dtype=object), np.float32)
    assert parsed[0] == np.float32(1e-5) and parsed[1] == np.inf and parsed[2] == -np.inf and np.isnan(parsed[3])
    assert convert_array(np.array(["7"], dtype=object), np.int64).tolist() == [7]
    assert convert_array(np.array([1.5, 2.0], np.float32), np.dtype(object)).tolist() == ["1.5", "2.0"]
    with pytest.raises(ValidationError, match="hello"):
        convert_array(np.array(["hello"], dtype=object), np.float32)


def test_bitcast_keeps_bits_and_scalar_shape():
    node = BitCast(_param([]), destination_type=Type.i32)
    out = node.evaluate([np.array(1.0, np.float32)])[0]
    assert out.shape == () and out.dtype == np.int32 and int(out) == 0x3F800000


def test_onnx_cast_options():
    x = np.array([1e6, 0.5], np.float32)
    (y,) = run_onnx(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E4M3FN, saturate=0), 21, {"x": x})
    assert y.dtype == ml_dtypes.float8_e4m3fn and np.isnan(y.astype(np.float32)[0])
    (y,) = run_onnx(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32), 19, {"x": x})
    assert y.dtype == np.int32 and y.tolist() == [1000000, 0]
    (y,) = run_onnx(helper.make_node("CastLike", ["x", "t"], ["y"]), 19, {"x": x, "t": np.zeros(1, np.float16)})
    assert y.dtype == np.float16


CONVERSIONS = [(np.float32, np.float16), (np.float16, np.float32), (np.int32, np.float32), (np.bool_, np.float32),
               (np.float32, ml_dtypes.bfloat16), (ml_dtypes.bfloat16, np.float64), (np.int64, np.float16),
               (np.int64, np.int8), (np.int32, np.uint8), (np.uint8, np.int64), (np.bool_, np.int32),
               (np.float32, np.int32), (np.float64, np.int8), (np.float16, np.uint8), (ml_dtypes.bfloat16, np.int16),
               (np.float32, np.bool_), (np.int64, np.bool_), (ml_dtypes.bfloat16, np.bool_), (np.float64, np.bool_)]


@pytest.mark.parametrize("src,dst", CONVERSIONS, ids=lambda d: np.dtype(d).name)
def test_convert_kernel_matches_reference(src, dst):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(4, 9)) * 1000).astype(src)
    if np.dtype(src).kind == "f" or src == ml_dtypes.bfloat16:
        x.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, 6e4, 0.0, -0.0]
    node = Convert(_param([4, 9], Type(src)), destination_type=Type(dst))
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith(("aten_", "onednn_reorder"))  # f32 <-> bf16: a oneDNN reorder
    got, want = kernel.fn([x])[0], node.evaluate([x])[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_conversions_aten_cannot_match_use_the_reference():
    assert select_kernel(Convert(_param([2]), destination_type=Type.i64)).exec_type == "ref"
    assert select_kernel(Convert(_param([2], Type.f64), destination_type=Type.bf16)).exec_type == "ref_bf16"
