"""UnrollIterators: TensorIterator / Loop bodies copied per iteration give the iterator's results."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
import vinerun.opset13 as ops
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.types import Type
from vinerun.ops.control_flow import (
    BodyOutputDescription,
    ConcatOutputDescription,
    InvariantInputDescription,
    MergedInputDescription,
    SliceInputDescription,
)
from vinerun.ops.loop import Loop, TensorIterator
from vinerun.transformations.unroll_iterators import UnrollIterators


def _rnn_iterator(stride: int) -> ov.Model:
    """h_t = tanh(x_t @ W + h_{t-1} * u), over 4 steps of x [4, 1, 3] (forward or backward), h0 an input."""
    x, h0 = ops.parameter([4, 1, 3], np.float32, name="x"), ops.parameter([1, 3], np.float32, name="h0")
    xt, h, u = Parameter(Type.f32, [1, 1, 3]), Parameter(Type.f32, [1, 3]), Parameter(Type.f32, [1, 3])
    w = ops.constant(np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32))
    step = ops.tanh(ops.add(ops.matmul(ops.reshape(xt, ops.constant(np.array([1, 3])), False), w, False, False),
                            ops.multiply(h, u)))
    body = ov.Model([step, ops.unsqueeze(step, ops.constant(np.array([0])))], [xt, h, u])
    start, end = (0, -1) if stride > 0 else (-1, 0)
    node = TensorIterator(x, h0, ops.constant(np.full((1, 3), 0.5, np.float32)), body=body, input_descriptions=(
        SliceInputDescription(0, 0, start, stride, 1, end, 0), MergedInputDescription(1, 1, 0),
        InvariantInputDescription(2, 2)), output_descriptions=(
        BodyOutputDescription(0, 0), ConcatOutputDescription(1, 1, start, stride, 1, end, 0)))
    return ov.Model([node.output(0), node.output(1)], [x, h0])


@pytest.mark.parametrize("stride", [1, -1])
def test_unrolled_tensor_iterator_matches(stride: int) -> None:
    model = _rnn_iterator(stride)
    rng = np.random.default_rng(1)
    feeds = [rng.standard_normal((4, 1, 3)).astype(np.float32), rng.standard_normal((1, 3)).astype(np.float32)]
    core = ov.Core()
    expected = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds)
    unrolled = model.clone()
    assert UnrollIterators()(unrolled).modified
    assert not any(n.type_name == "TensorIterator" for n in unrolled.get_ordered_ops())
    got = core.compile_model(unrolled, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds)
    for i in range(2):
        np.testing.assert_allclose(got[i], expected[i], rtol=1e-5, atol=1e-6)
    assert not UnrollIterators(limit=3)(model.clone()).modified  # 4 iterations: over the limit


def test_loop_with_a_constant_trip_count_unrolls() -> None:
    a = ops.parameter([2], np.float32, name="a")
    p = Parameter(Type.f32, [2])
    body = ov.Model([ops.constant(np.array(True)), ops.multiply(p, ops.constant(np.float32(2)))], [p])
    loop = Loop(Constant(np.array(3, np.int64)), Constant(np.array(True)), a, body=body,
                special_body_ports=[-1, 0], input_descriptions=(MergedInputDescription(2, 0, 1),),
                output_descriptions=(BodyOutputDescription(1, 0),))
    model = ov.Model([loop.output(0)], [a])
    assert UnrollIterators()(model).modified
    out = ov.Core().compile_model(model, "CPU")(np.array([1, 2], np.float32))[0]
    np.testing.assert_array_equal(out, [8, 16])
