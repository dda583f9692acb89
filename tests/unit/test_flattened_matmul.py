"""FlattenedMatMulUnflattening: ``x.view(-1, K) @ W + b`` then ``.view(*x.shape[:-1], N)`` as GPT-2's Conv1D
exports it (target shapes computed from ShapeOf at run time) becomes ``x @ W + b``; the same outputs, fewer plan
steps; reshapes that are not the exact unflattening stay."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.concat_split import Concat
from vinerun.ops.gather import Gather
from vinerun.ops.matmul import MatMul
from vinerun.ops.reshape import Reshape, Squeeze, Unsqueeze
from vinerun.ops.shape_of import ShapeOf
from vinerun.ops.slicing import Slice
from vinerun.transformations.flattened_matmul import FlattenedMatMulUnflattening
from vinerun.transformations.shape_arithmetic import shape_value

RNG = np.random.default_rng(3)
K, N = 16, 24


def i64(*values):
    return Constant(np.array(values, np.int64))


def dim(x, axis):
    """``x.size(axis)`` as a 1-D value, the way torch.onnx writes it: Gather(ShapeOf) then Unsqueeze."""
    return Unsqueeze(Gather(ShapeOf(x), Constant(np.array(axis, np.int64)), Constant(np.array(0, np.int64))), i64(0))


def conv1d_model(lead=(-1, -1), order=(0, 1), bias_shape=(N,), transpose_b=False, out_last=N, rank_two_out=False):
    """transformers' Conv1D as exported: ``Reshape(x, [-1, x.size(-1)])``, MatMul, bias, and ``Reshape`` back to
    the leading dims of x in ``order`` and ``out_last``."""
    x = Parameter(Type.f32, [*lead, K])
    last = Unsqueeze(Squeeze(Slice(ShapeOf(x), i64(-1), i64(2**63 - 1), i64(1)), i64(0)), i64(0))
    flat = Reshape(x, Concat([i64(-1), last], axis=0))
    w = RNG.standard_normal((N, K) if transpose_b else (K, N)).astype(np.float32)
    y = MatMul(flat, Constant(w), transpose_b=transpose_b)
    if bias_shape is not None:
        y = Add(y, Constant(RNG.standard_normal(bias_shape).astype(np.float32)))
    back = [i64(-1)] if rank_two_out else [dim(x, a) for a in order]
    out = Reshape(y, Concat([*back, i64(out_last)], axis=0))
    return Model([Relu(out)], [x])


def kinds(model):
    return [n.type_name for n in model.get_ordered_ops()]


@pytest.mark.parametrize("variant", [{}, {"bias_shape": (1, N)}, {"bias_shape": None}, {"transpose_b": True},
                                     {"lead": (2, -1)}, {"lead": (3, 5)}])
def test_the_unflattened_matmul_gives_the_same_outputs(variant):
    model = conv1d_model(**variant)
    lead = variant.get("lead", (-1, -1))
    x = RNG.standard_normal([3 if d < 0 else d for d in lead] + [K]).astype(np.float32)
    want = run_reference(model, [x])[0]
    assert FlattenedMatMulUnflattening()(model).modified
    assert "Reshape" not in kinds(model)
    np.testing.assert_allclose(run_reference(model, [x])[0], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("variant", [{"order": (1, 0)}, {"out_last": -1}, {"rank_two_out": True},
                                     {"bias_shape": (4, N)}])
def test_a_reshape_that_is_not_the_unflattening_stays(variant):
    if "bias_shape" in variant:  # a bias that broadcasts over rows: not a per-column bias
        model = conv1d_model(lead=(-1, 4), **variant)
    else:
        model = conv1d_model(**variant)
    assert not FlattenedMatMulUnflattening()(model).modified
    assert kinds(model).count("Reshape") == 2


def test_the_cpu_plan_of_a_dynamic_model_loses_the_reshapes_and_keeps_its_outputs():
    model = conv1d_model()
    inputs = [RNG.standard_normal(shape).astype(np.float32) for shape in ((1, 1, K), (2, 7, K))]
    wants = [run_reference(model, [x])[0] for x in inputs]
    compiled = ov.Core().compile_model(model, "CPU", {**F32, "CPU_RUNTIME_CACHE_CAPACITY": 0})
    steps = [s.node.type_name for s in compiled._impl.plan.steps]
    assert "Reshape" not in steps and "ShapeOf" not in steps
    request = compiled.create_infer_request()
    for x, want in zip(inputs, wants, strict=True):
        np.testing.assert_allclose(request.infer([x])[0], want, rtol=1e-4, atol=1e-4)


def test_shape_value_follows_shape_arithmetic_with_symbols():
    x = Parameter(Type.f32, [-1, 4, -1])
    src = x.output(0)
    assert shape_value(ShapeOf(x).output(0)) == ([(src, 0), 4, (src, 2)], False)
    tail = Slice(ShapeOf(x), i64(1), i64(2**63 - 1), i64(1))
    assert shape_value(Concat([tail, i64(7)], axis=0).output(0)) == ([4, (src, 2), 7], False)
    first = Gather(ShapeOf(x), i64(0), Constant(np.array(0, np.int64)))  # a 1-D index: a 1-D value
    assert shape_value(Squeeze(first, i64(0)).output(0)) == ([(src, 0)], True)
    assert shape_value(Gather(ShapeOf(x), Constant(np.array(-1, np.int64)), Constant(np.array(0, np.int64)))
                       .output(0)) == ([(src, 2)], True)
    assert shape_value(x.output(0)) is None  # not shape arithmetic
