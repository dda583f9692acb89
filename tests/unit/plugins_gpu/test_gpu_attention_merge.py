"""The GPU's passes take an attention's head merge into the fused node (``merge=True``) when the exporter reshaped
the attention's output to the shape it already had first (transformers' BERT: ``[B, H, S, D] -> Reshape to
[B, H, S, D] -> Transpose [0, 2, 1, 3] -> Reshape to [B, S, H*D]``): that Reshape leaves the graph
(:class:`IdentityReshapeElimination`), the plan runs one FusedAttention, and the outputs are what they were."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.transformations.identity_elimination import IdentityReshapeElimination

RNG = np.random.default_rng(17)
B, S, H, D = 1, 16, 4, 8


def ints(*values: int):
    return ops.constant(np.array(values, np.int64))


def exported_attention(identity: bool = True) -> Model:
    """q, k, v [B, S, H*D] -> head splits -> softmax(q k^T / sqrt(D) + mask) v -> [identity Reshape] -> the head
    merge (Transpose, Reshape to [B, S, H*D]) -> a MatMul (the output projection reads the merged heads)."""
    q, k, v = (Parameter(Type.f32, [B, S, H * D], name=n) for n in "qkv")
    mask = Parameter(Type.f32, [B, 1, 1, S], name="mask")
    heads = [ops.transpose(ops.reshape(x, ints(B, S, H, D), False), ints(0, 2, 1, 3)) for x in (q, v)]
    kt = ops.transpose(ops.reshape(k, ints(B, S, H, D), False), ints(0, 2, 3, 1))
    scores = ops.add(ops.multiply(ops.matmul(heads[0], kt, False, False), ops.constant(np.float32(D ** -0.5))), mask)
    ctx = ops.matmul(ops.softmax(scores, -1), heads[1], False, False)
    if identity:
        ctx = ops.reshape(ctx, ints(B, H, S, D), False)
    merged = ops.reshape(ops.transpose(ctx, ints(0, 2, 1, 3)), ints(B, S, H * D), False)
    y = ops.matmul(merged, ops.constant(RNG.standard_normal([H * D, H * D]).astype(np.float32)), False, False)
    return Model([Result(y)], [q, k, v, mask], "attention")


def inputs() -> list[np.ndarray]:
    mask = np.where(RNG.random([B, 1, 1, S]) < 0.3, -1e4, 0.0).astype(np.float32)
    return [*(RNG.standard_normal([B, S, H * D]).astype(np.float32) for _ in range(3)), mask]


@pytest.mark.parametrize("identity", [True, False])
def test_the_head_merge_goes_into_the_fused_attention(stand_in, identity):
    model, data = exported_attention(identity), inputs()
    want = run_reference(model, data)[0]
    compiled = ov.Core().compile_model(model, "GPU", {"INFERENCE_PRECISION_HINT": "f32"})
    steps = compiled._impl.plan.steps
    assert [s.node.type_name for s in steps] == ["FusedAttention", "FusedMatMul"]
    assert steps[0].node.merge and steps[0].node.split == "qkv"
    np.testing.assert_allclose(compiled(data)[0], want, rtol=1e-4, atol=1e-4)


def test_only_a_reshape_to_the_shape_it_has_leaves():
    x = Parameter(Type.f32, [2, 3, 4])
    same = ops.reshape(x, ints(2, 3, 4), False)
    other = ops.reshape(same, ints(2, 12), False)
    model = Model([Result(ops.relu(other))], [x])
    data = [RNG.standard_normal([2, 3, 4]).astype(np.float32)]
    want = run_reference(model, data)[0]
    assert IdentityReshapeElimination()(model).modified
    assert [n.type_name for n in model.get_ordered_ops()].count("Reshape") == 1
    np.testing.assert_array_equal(run_reference(model, data)[0], want)


def test_a_reshape_of_a_dynamic_shape_stays():
    x = Parameter(Type.f32, [-1, 3])
    model = Model([Result(ops.relu(ops.reshape(x, ints(-1, 3), False)))], [x])
    assert not IdentityReshapeElimination()(model).modified
