"""LSTMSequenceToCell (transformations/sequence_to_cell.py): a one-step LSTMSequence becomes an LSTMCell between
Squeeze/Unsqueeze views, with the same outputs; longer, clipped or bidirectional sequences are left alone."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.rnn import LSTMSequence
from vinerun.transformations.sequence_to_cell import LSTMSequenceToCell

RNG = np.random.default_rng(4)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def sequence_model(batch=2, steps=1, inputs=6, hidden=5, directions=1, **attrs):
    x = Parameter(Type.f32, [batch, steps, inputs])
    h, c = Parameter(Type.f32, [batch, directions, hidden]), Parameter(Type.f32, [batch, directions, hidden])
    weights = (rand(directions, 4 * hidden, inputs), rand(directions, 4 * hidden, hidden), rand(directions, 4 * hidden))
    node = LSTMSequence(x, h, c, Constant(np.full(batch, steps, np.int32)), *(Constant(w) for w in weights),
                        hidden_size=hidden, **attrs)
    return Model(list(node.outputs()), [x, h, c])


def feed(model):
    return [rand(*p.get_output_partial_shape(0).to_shape()) for p in model.get_parameters()]


@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_one_step_becomes_a_cell_with_the_same_outputs(direction):
    model = sequence_model(direction=direction)
    data = feed(model)
    want = run_reference(model, data)
    assert LSTMSequenceToCell()(model).modified
    kinds = [n.type_name for n in model.get_ordered_ops()]
    assert "LSTMSequence" not in kinds and "LSTMCell" in kinds
    for got, w in zip(run_reference(model, data), want, strict=True):
        assert got.shape == w.shape
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_the_cpu_runs_it_as_a_cell():
    model = sequence_model()
    data = feed(model)
    want = run_reference(model, data)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert "LSTMCell" in [s.node.type_name for s in compiled._impl.plan.steps]
    for got, w in zip(compiled.create_infer_request().infer(data).values(), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", [{"steps": 3}, {"clip": 1.0}, {"directions": 2, "direction": "bidirectional"},
                                   {"activations": ["relu", "tanh", "tanh"]}])
def test_others_are_left_alone(attrs):
    assert not LSTMSequenceToCell()(sequence_model(**attrs)).modified
