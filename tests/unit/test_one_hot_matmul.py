"""OneHotMatMulToGather: ``one_hot(ids) @ table`` as TensorFlow / JAX exports write it becomes a Gather, with the
one-hot's zeros for ids outside the table (negative ones included); other comparisons stay MatMuls."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.comparison import Equal
from vinerun.ops.convert import Convert
from vinerun.ops.matmul import MatMul
from vinerun.transformations.one_hot_matmul import OneHotMatMulToGather

RNG = np.random.default_rng(11)
K, D = 9, 5


def one_hot_model(classes: np.ndarray, transpose_b: bool = False, ids_first: bool = True) -> Model:
    ids = Parameter(Type.i32, [2, 6, 1])
    table = RNG.standard_normal((D, K) if transpose_b else (K, D)).astype(np.float32)
    c = Constant(classes)
    equal = Equal(ids, c) if ids_first else Equal(c, ids)
    return Model([MatMul(Convert(equal, destination_type=Type.f32), Constant(table), transpose_b=transpose_b)], [ids])


IDS = np.array([[0, 8, 9, 100, -1, -9], [3, 3, 1, 2, 7, 4]], np.int32)[..., None]


@pytest.mark.parametrize(("transpose_b", "ids_first"), [(False, True), (True, False)])
def test_one_hot_matmul_becomes_a_gather_with_zeros_outside_the_table(transpose_b, ids_first):
    model = one_hot_model(np.arange(K, dtype=np.int32).reshape(1, 1, K), transpose_b, ids_first)
    want = run_reference(model, [IDS])[0]
    assert OneHotMatMulToGather()(model).modified
    kinds = {n.type_name for n in model.get_ordered_ops()}
    assert "Gather" in kinds and "MatMul" not in kinds
    got = run_reference(model, [IDS])[0]
    np.testing.assert_array_equal(got, want)
    assert not got[0, 2:].any()  # 9, 100, -1 and -9 are outside: zero rows, as in the one-hot product


def test_the_cpu_runs_the_lookup_and_agrees_with_the_one_hot_product():
    model = one_hot_model(np.arange(K, dtype=np.int32).reshape(1, 1, K))
    want = run_reference(model, [IDS])[0]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([IDS])[0], want, rtol=1e-6, atol=1e-6)
    assert "MatMul" not in {n.type_name for n in compiled.get_runtime_model().get_ordered_ops()}


@pytest.mark.parametrize("classes", [np.arange(1, K + 1, dtype=np.int32), np.arange(K, dtype=np.int32)[::-1].copy()])
def test_other_comparisons_stay_matmuls(classes):
    model = one_hot_model(classes.reshape(1, 1, -1))
    assert not OneHotMatMulToGather()(model).modified


def test_float_ids_stay_a_matmul():
    ids = Parameter(Type.f32, [2, 6, 1])  # 2.5 matches no class: a Gather would not say so
    onehot = Convert(Equal(ids, Constant(np.arange(K, dtype=np.float32).reshape(1, 1, K))), destination_type=Type.f32)
    model = Model([MatMul(onehot, Constant(RNG.standard_normal((K, D)).astype(np.float32)))], [ids])
    assert not OneHotMatMulToGather()(model).modified
