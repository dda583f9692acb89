"""ParallelMatMulFusion: MatMuls by constant weights that read one tensor become one MatMul and a split."""

from __future__ import annotations

import numpy as np
import pytest

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.matmul import MatMul
from vinerun.transformations.parallel_matmul import ParallelMatMulFusion

RNG = np.random.default_rng(3)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def _projections(widths: list[int], bias: bool, transpose_b: bool) -> Model:
    x = Parameter(Type.f32, [2, 5, 8], name="x")
    outs = []
    for i, n in enumerate(widths):
        w = rand(n, 8) if transpose_b else rand(8, n)
        y = MatMul(x, Constant(w), transpose_a=False, transpose_b=transpose_b, name=f"proj{i}")
        if bias:
            y = Add(y, Constant(rand(n)), name=f"bias{i}")
        outs.append(Result(Relu(y)))
    return Model(outs, [x])


def _types(model: Model) -> list[str]:
    return [n.type_name for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


@pytest.mark.parametrize(("bias", "transpose_b"), [(True, False), (True, True), (False, False)])
def test_projections_of_one_tensor_become_one_matmul(bias: bool, transpose_b: bool) -> None:
    model = _projections([8, 8, 4], bias, transpose_b)
    x = rand(2, 5, 8)
    want = run_reference(model, [x])
    assert ParallelMatMulFusion()(model).modified
    kinds = _types(model)
    assert kinds.count("MatMul") == 1 and kinds.count("VariadicSplit") == 1
    assert kinds.count("Add") == (1 if bias else 0)
    for got, ref in zip(run_reference(model, [x]), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_mixed_members_and_lone_matmuls_stay() -> None:
    x = Parameter(Type.f32, [3, 8], name="x")
    biased = Add(MatMul(x, Constant(rand(8, 4))), Constant(rand(4)))
    bare = MatMul(x, Constant(rand(8, 6)))  # no bias: not in the biased one's group
    by_tensor = MatMul(x, Parameter(Type.f32, [8, 2], name="w").output(0))  # weight not constant
    model = Model([Result(biased), Result(bare), Result(by_tensor)], [x, by_tensor.input_value(1).node])
    assert not ParallelMatMulFusion()(model).modified
    assert _types(model).count("MatMul") == 3
