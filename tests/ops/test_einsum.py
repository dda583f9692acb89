"""Einsum, Det and ONNX Gemm: shape inference, references, the Einsum kernel, ONNX translation."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

from tests.ops._onnx_util import run_onnx
from tests.ops._precision import exec_type
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.det import Det
from vinerun.ops.einsum import Einsum, parse_equation
from vinerun.plugins.cpu.kernels import select_kernel


def _param(shape, et=Type.f32):
    return Parameter(et, shape).output(0)


def test_parse_equation():
    assert parse_equation("bij, bjk -> bik").equation() == "bij,bjk->bik"
    assert parse_equation("ji,jk").equation() == "ji,jk->ik"  # implicit: labels seen once, sorted
    assert parse_equation("...ii").equation() == "...ii->..."
    with pytest.raises(ValidationError, match="appear in no input"):
        parse_equation("ij->k")


@pytest.mark.parametrize("equation, shapes, expected", [
    ("ij->ji", [[2, 3]], [3, 2]),
    ("bij,bjk->bik", [[5, 2, 3], [5, 3, 4]], [5, 2, 4]),
    ("...ii->...i", [[7, 2, 3, 3]], [7, 2, 3]),
    ("i,i", [[4], [4]], []),
    ("...ij,...jk", [[1, 2, 3], [6, 3, 4]], [6, 2, 4]),
    ("ij->i", [[-1, 3]], [-1]),
])
def test_shape_inference(equation, shapes, expected):
    node = Einsum([_param(s) for s in shapes], equation=equation)
    assert node.get_output_partial_shape(0) == PartialShape(expected)


def test_shape_errors():
    with pytest.raises(ValidationError, match="sizes"):
        Einsum([_param([2, 3]), _param([4, 5])], equation="ij,jk->ik")
    with pytest.raises(ValidationError, match="names 2 inputs"):
        Einsum([_param([2, 3])], equation="ij,jk->ik")


def test_reference_values():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = Einsum([_param([2, 3]), _param([3, 4])], equation="ij,jk->ik").evaluate([a, b])[0]
    np.testing.assert_array_equal(out, a @ b)
    diag = Einsum([_param([3, 3])], equation="ii->i").evaluate([np.arange(9, dtype=np.int32).reshape(3, 3)])[0]
    assert diag.tolist() == [0, 4, 8] and diag.dtype == np.int32


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ii->...i", [(2, 3, 3)]), ("ij->", [(3, 4)]),
])
def test_kernel_matches_reference(dtype, equation, shapes):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    node = Einsum([_param(list(s), Type(dtype)) for s in shapes], equation=equation)
    kernel = select_kernel(node)
    assert kernel.exec_type == exec_type("aten_einsum", dtype)
    got, want = kernel.fn(xs)[0], node.evaluate(xs)[0]
    assert got.dtype == want.dtype == np.dtype(dtype) and got.shape == want.shape
    tol = {np.float16: 5e-3, ml_dtypes.bfloat16: 5e-2}.get(dtype, 1e-5)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_det():
    x = np.array([[[1.0, 2.0], [3.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]], np.float32)
    node = Det(_param([2, 2, 2]))
    assert node.get_output_partial_shape(0) == PartialShape([2])
    np.testing.assert_allclose(node.evaluate([x])[0], [-2.0, 6.0], rtol=1e-6)
    with pytest.raises(ValidationError, match="square"):
        Det(_param([2, 3]))


@pytest.mark.parametrize("attrs", [{}, {"transA": 1}, {"transB": 1}, {"alpha": 0.5, "beta": 2.0},
                                   {"alpha": 0.25, "beta": 0.35, "transA": 1, "transB": 1}])
@pytest.mark.parametrize("c_shape", [None, (), (5,), (1, 5), (3, 5)])
def test_onnx_gemm(attrs, c_shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3) if attrs.get("transA") else (3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4) if attrs.get("transB") else (4, 5)).astype(np.float32)
    feeds = {"a": a, "b": b}
    if c_shape is not None:
        feeds["c"] = rng.standard_normal(c_shape).astype(np.float32)
    got = run_onnx(helper.make_node("Gemm", list(feeds), ["y"], **attrs), 13, feeds)[0]
    want = attrs.get("alpha", 1.0) * ((a.T if attrs.get("transA") else a) @ (b.T if attrs.get("transB") else b))
    if c_shape is not None:
        want = want + attrs.get("beta", 1.0) * feeds["c"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
