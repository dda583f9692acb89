"""Reductions and ArgMax / ArgMin: shape inference, references, CPU kernels, ONNX translation."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

import vinerun as ov
from tests.ops._onnx_util import run_onnx
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.argminmax import ArgMax, ArgMin
from vinerun.ops.einsum import Einsum
from vinerun.ops.reduction import (
    ReduceL1,
    ReduceL2,
    ReduceLogicalAnd,
    ReduceLogicalOr,
    ReduceMax,
    ReduceMean,
    ReduceMin,
    ReduceProd,
    ReduceSum,
)
from vinerun.ops.softmax import LogSoftmax, Softmax
from vinerun.plugins.cpu.kernels import select_kernel

FLOAT_REDUCTIONS = [ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2]
DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
TOL = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 2e-3, ml_dtypes.bfloat16: 2e-2}


def _param(shape, et=Type.f32):
    return Parameter(et, shape).output(0)


def _axes(*axes):
    return Constant(np.array(axes, np.int64)).output(0)


# --- shape inference ----------------------------------------------------------------------------
def test_shape_with_constant_axes():
    assert ReduceSum(_param([2, 3, 4]), _axes(1, -1)).get_output_partial_shape(0) == PartialShape([2])
    assert ReduceSum(_param([2, 3, 4]), _axes(1), keep_dims=True).get_output_partial_shape(0) == PartialShape([2, 1, 4])
    assert ReduceMax(_param([2, -1, 4]), _axes(0)).get_output_partial_shape(0) == PartialShape([-1, 4])


def test_shape_with_runtime_axes():
    axes = Parameter(Type.i64, [1]).output(0)
    assert ReduceSum(_param([2, 3, 4]), axes, keep_dims=True).get_output_partial_shape(0) == PartialShape.dynamic(3)
    assert ReduceSum(_param([2, 3, 4]), axes).get_output_partial_shape(0) == PartialShape.dynamic(2)
    assert ReduceSum(_param(PartialShape.dynamic()), axes).get_output_partial_shape(0).rank.is_dynamic


def test_empty_axes_reduce_nothing():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    node = ReduceSum(_param([2, 3]), Constant(np.zeros(0, np.int64)))
    assert node.get_output_partial_shape(0) == PartialShape([2, 3])
    np.testing.assert_array_equal(node.evaluate([x, np.zeros(0, np.int64)])[0], x)


def test_bad_axes_raise():
    with pytest.raises(ValidationError, match="out of range"):
        ReduceSum(_param([2, 3]), _axes(2))
    with pytest.raises(ValidationError, match="integer"):
        ReduceSum(_param([2, 3]), Constant(np.array([0.0], np.float32)))
    with pytest.raises(ValidationError, match="boolean"):
        ReduceLogicalAnd(_param([2, 3]), _axes(0))


# --- references on hand-checked values -------------------------------------------------------------
X = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)


@pytest.mark.parametrize("cls, expected", [
    (ReduceSum, [2.0, 3.0]), (ReduceMean, [2 / 3, 1.0]), (ReduceMax, [3.0, 5.0]), (ReduceMin, [-2.0, -6.0]),
    (ReduceProd, [-6.0, -120.0]), (ReduceL1, [6.0, 15.0]), (ReduceL2, [np.sqrt(14.0), np.sqrt(77.0)]),
])
def test_references(cls, expected):
    node = cls(_param([2, 3]), _axes(1))
    out = node.evaluate([X, np.array([1])])[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@pytest.mark.parametrize("cls, dtype, expected", [
    (ReduceSum, np.float32, 0.0), (ReduceProd, np.float32, 1.0), (ReduceMax, np.float32, -np.inf),
    (ReduceMin, np.float32, np.inf), (ReduceL1, np.float32, 0.0), (ReduceL2, np.float32, 0.0),
    (ReduceMax, np.int32, np.iinfo(np.int32).min), (ReduceMin, np.uint8, 255), (ReduceMax, np.bool_, False),
    (ReduceMin, np.bool_, True),
])
def test_empty_set_gives_identity(cls, dtype, expected):
    x = np.zeros((2, 0, 4), dtype)
    node = cls(_param([2, 0, 4], Type(dtype)), _axes(1), keep_dims=True)
    out = node.evaluate([x, np.array([1])])[0]
    assert out.shape == (2, 1, 4) and out.dtype == dtype
    assert np.all(out == expected)


def test_integer_and_boolean_reductions():
    xi = np.array([[1, 2], [3, 4]], np.int32)
    assert ReduceSum(_param([2, 2], Type.i32), _axes(0)).evaluate([xi, np.array([0])])[0].dtype == np.int32
    assert ReduceMean(_param([2, 2], Type.i32), _axes(0)).evaluate([xi, np.array([0])])[0].tolist() == [2, 3]
    xb = np.array([[True, False], [True, True]])
    out_and = ReduceLogicalAnd(_param([2, 2], Type.boolean), _axes(1)).evaluate([xb, np.array([1])])[0]
    out_or = ReduceLogicalOr(_param([2, 2], Type.boolean), _axes(1)).evaluate([xb, np.array([1])])[0]
    assert out_and.tolist() == [False, True] and out_or.tolist() == [True, True]


def test_argmax_argmin():
    x = np.array([[2.0, 7.0, 7.0], [5.0, 1.0, 1.0]], np.float32)
    assert ArgMax(_param([2, 3]), axis=1).evaluate([x])[0].tolist() == [[1], [0]]
    assert ArgMax(_param([2, 3]), axis=1, select_last_index=True).evaluate([x])[0].tolist() == [[2], [0]]
    node = ArgMin(_param([2, 3]), axis=-1, keepdims=False, select_last_index=True)
    assert node.get_output_partial_shape(0) == PartialShape([2])
    assert node.get_output_element_type(0) == Type.i64
    assert node.evaluate([x])[0].tolist() == [0, 2]


# --- CPU kernels against the references ------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cls", FLOAT_REDUCTIONS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("keep", [False, True])
def test_kernel_matches_reference(cls, dtype, keep):
    rng = np.random.default_rng(0)
    x = (rng.random((3, 4, 5)) + 0.5).astype(dtype)
    axes = np.array([0, -1], np.int64)
    node = cls(_param([3, 4, 5], Type(dtype)), Parameter(Type.i64, [2]), keep_dims=keep)
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith("aten_")
    got, want = kernel.fn([x, axes])[0], node.evaluate([x, axes])[0]
    assert got.dtype == want.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=TOL[dtype])


@pytest.mark.parametrize("cls", [ReduceMax, ReduceSum])
def test_kernel_empty_input_uses_identity(cls):
    node = cls(_param([2, 0, 3]), Parameter(Type.i64, [1]), keep_dims=True)
    out = select_kernel(node).fn([np.zeros((2, 0, 3), np.float32), np.array([1])])[0]
    np.testing.assert_array_equal(out, node.evaluate([np.zeros((2, 0, 3), np.float32), np.array([1])])[0])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cls", [ArgMax, ArgMin])
@pytest.mark.parametrize("last", [False, True])
def test_arg_kernel_matches_reference(cls, dtype, last):
    x = np.random.default_rng(1).integers(0, 4, (4, 6)).astype(dtype)  # many ties
    node = cls(_param([4, 6], Type(dtype)), axis=1, keepdims=False, select_last_index=last)
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith("aten_")
    got, want = kernel.fn([x])[0], node.evaluate([x])[0]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


# --- ONNX translation ------------------------------------------------------------------------------
def test_onnx_attribute_axes_before_opset_18():
    x = np.random.default_rng(2).random((2, 3, 4)).astype(np.float32)
    node = helper.make_node("ReduceMean", ["x"], ["y"], axes=[0, 2], keepdims=0)
    np.testing.assert_allclose(run_onnx(node, 13, {"x": x})[0], x.mean(axis=(0, 2)), rtol=1e-6)
    node = helper.make_node("ReduceL2", ["x"], ["y"])  # no axes: all of them, keepdims
    np.testing.assert_allclose(run_onnx(node, 11, {"x": x})[0], np.sqrt((x * x).sum(keepdims=True)), rtol=1e-6)


def test_onnx_axes_input_and_noop():
    x = np.random.default_rng(3).random((2, 3)).astype(np.float32)
    node = helper.make_node("ReduceSum", ["x"], ["y"], noop_with_empty_axes=1)
    np.testing.assert_array_equal(run_onnx(node, 13, {"x": x})[0], x)
    node = helper.make_node("ReduceSum", ["x"], ["y"])
    np.testing.assert_allclose(run_onnx(node, 13, {"x": x})[0], x.sum(keepdims=True), rtol=1e-6)
    node = helper.make_node("ReduceSumSquare", ["x", "axes"], ["y"], keepdims=0)
    got = run_onnx(node, 18, {"x": x, "axes": np.array([-1], np.int64)})[0]
    np.testing.assert_allclose(got, (x * x).sum(axis=-1), rtol=1e-6)


def test_openvino_ir_round_trip(tmp_path):
    """The ops serialize under OpenVINO's names and attributes: openvino reads the IR and agrees."""
    ovo = pytest.importorskip("openvino")
    p = Parameter(Type.f32, [2, 3, 4], name="x")
    axes = _axes(1, -1)
    outs = [cls(p, axes, keep_dims=keep) for cls in FLOAT_REDUCTIONS for keep in (False, True)]
    outs += [Softmax(p, axis=-1), LogSoftmax(p, axis=1), Einsum([p, p], equation="bij,bkj->bik")]
    ov.serialize(Model([Result(o) for o in outs], [p], "rt"), tmp_path / "m.xml")
    x = np.random.default_rng(5).random((2, 3, 4)).astype(np.float32)
    core = ov.Core()
    ours = core.compile_model(core.read_model(tmp_path / "m.xml"), "CPU")({0: x}).to_tuple()
    theirs = ovo.Core().compile_model(str(tmp_path / "m.xml"), "CPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"})({0: x}).to_tuple()
    for node, a, b in zip(outs, ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=node.type_name)
