"""Softmax, LogSoftmax, Hardmax and the two losses: shapes, references, kernels, ONNX semantics."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

from tests.ops._onnx_util import run_onnx
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.losses import NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
from vinerun.ops.softmax import Hardmax, LogSoftmax, Softmax
from vinerun.plugins.cpu.kernels import select_kernel

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
TOL = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 2e-3, ml_dtypes.bfloat16: 2e-2}


def _param(shape, et=Type.f32):
    return Parameter(et, shape).output(0)


def _np_softmax(x, axes):
    e = np.exp(x - x.max(axis=axes, keepdims=True))
    return e / e.sum(axis=axes, keepdims=True)


def test_softmax_reference_and_shape():
    x = np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]], np.float32)
    node = Softmax(_param([2, 3]), axis=-1)
    assert node.get_output_partial_shape(0) == PartialShape([2, 3])
    out = node.evaluate([x])[0]
    np.testing.assert_allclose(out[0], np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum(), rtol=1e-6)
    np.testing.assert_allclose(out[1], [1 / 3] * 3, rtol=1e-6)  # no overflow
    log = LogSoftmax(_param([2, 3]), axis=1).evaluate([x])[0]
    np.testing.assert_allclose(log, np.log(out), rtol=1e-5)


def test_softmax_validation():
    with pytest.raises(ValidationError, match="out of range"):
        Softmax(_param([2, 3]), axis=2)
    with pytest.raises(ValidationError, match="floating point"):
        Softmax(_param([2, 3], Type.i32), axis=1)


def test_hardmax_first_maximum_wins():
    x = np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 1.0]], np.float32)
    out = Hardmax(_param([2, 3]), axis=1).evaluate([x])[0]
    assert out.tolist() == [[1, 0, 0], [0, 1, 0]] and out.dtype == np.float32


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cls", [Softmax, LogSoftmax])
@pytest.mark.parametrize("axis", [0, -1])
def test_kernel_matches_reference(cls, dtype, axis):
    x = (np.random.default_rng(0).standard_normal((3, 4, 5)) * 3).astype(dtype)
    node = cls(_param([3, 4, 5], Type(dtype)), axis=axis)
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith(("aten_", "onednn_"))  # not the reference
    got, want = kernel.fn([x])[0], node.evaluate([x])[0]
    assert got.dtype == want.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=TOL[dtype], atol=TOL[dtype])


# --- ONNX: "coerce to 2-D" before opset 13, one axis since ---------------------------------------
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_onnx_legacy_coerces_to_2d(op, axis):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    got = run_onnx(helper.make_node(op, ["x"], ["y"], axis=axis), 11, {"x": x})[0]
    flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
    if op == "Hardmax":
        want = np.eye(flat.shape[1], dtype=np.float32)[flat.argmax(axis=1)]
    else:
        want = _np_softmax(flat, 1)
        want = np.log(want) if op == "LogSoftmax" else want
    np.testing.assert_allclose(got, want.reshape(x.shape), rtol=1e-5, atol=1e-6)


def test_onnx_opset13_uses_one_axis():
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    got = run_onnx(helper.make_node("Softmax", ["x"], ["y"], axis=1), 13, {"x": x})[0]
    np.testing.assert_allclose(got, _np_softmax(x, 1), rtol=1e-5)


# --- losses -------------------------------------------------------------------------------------
LOGP = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1]], np.float32))
TARGET = np.array([0, 1], np.int64)


def test_nll_reductions_and_weights():
    node = NegativeLogLikelihoodLoss(_param([2, 3]), _param([2], Type.i64), reduction="none")
    assert node.get_output_partial_shape(0) == PartialShape([2])
    np.testing.assert_allclose(node.evaluate([LOGP, TARGET])[0], [np.log(2), -np.log(0.8)], rtol=1e-6)
    w = np.array([2.0, 1.0, 1.0], np.float32)
    mean = NegativeLogLikelihoodLoss(_param([2, 3]), _param([2], Type.i64), _param([3]))
    assert mean.get_output_partial_shape(0) == PartialShape([])
    want = (2 * np.log(2) - np.log(0.8)) / 3
    np.testing.assert_allclose(mean.evaluate([LOGP, TARGET, w])[0], want, rtol=1e-6)


def test_nll_ignore_index_may_be_out_of_range():
    target = np.array([0, -5], np.int64)
    node = NegativeLogLikelihoodLoss(_param([2, 3]), _param([2], Type.i64), reduction="mean", ignore_index=-5)
    np.testing.assert_allclose(node.evaluate([LOGP, target])[0], np.log(2), rtol=1e-6)
    bad = NegativeLogLikelihoodLoss(_param([2, 3]), _param([2], Type.i64))
    with pytest.raises(ValidationError, match="out of range"):
        bad.evaluate([LOGP, target])


def test_loss_validation():
    with pytest.raises(ValidationError, match="reduction"):
        NegativeLogLikelihoodLoss(_param([2, 3]), _param([2], Type.i64), reduction="max")
    with pytest.raises(ValidationError, match="does not match"):
        NegativeLogLikelihoodLoss(_param([2, 3, 4]), _param([2, 5], Type.i64))


def test_softmax_cross_entropy_outputs():
    scores = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    labels = np.array([[0, 1, 2, 1], [2, 2, 0, 1]], np.int64)
    node = SoftmaxCrossEntropyLoss(_param([2, 3, 4]), _param([2, 4], Type.i64), reduction="sum")
    assert node.get_output_partial_shape(1) == PartialShape([2, 3, 4])
    loss, log_prob = node.evaluate([scores, labels])
    np.testing.assert_allclose(log_prob, np.log(_np_softmax(scores, 1)), rtol=1e-5, atol=1e-6)
    picked = np.take_along_axis(log_prob, labels[:, None], 1)
    np.testing.assert_allclose(loss, -picked.sum(), rtol=1e-5)
    assert loss.shape == () and loss.dtype == np.float32


def test_onnx_losses_optional_outputs():
    scores = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    labels = np.array([4, 0, 2], np.int64)
    loss, = run_onnx(helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"], reduction="none"), 13,
                     {"x": scores, "t": labels})
    want = -np.log(_np_softmax(scores, 1))[np.arange(3), labels]
    np.testing.assert_allclose(loss, want, rtol=1e-5)
