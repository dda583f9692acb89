"""Stateful models: query_state / VariableState / reset_state on requests and compiled models."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import InputError
from vinerun.op.util import Variable, VariableInfo


def _accumulator(init: np.ndarray | None = None, shape: tuple[int, ...] = (2, 3), variable_id: str = "acc") -> ov.Model:
    """y = state + x; state <- y (the state starts at ``init``, or zeros)."""
    p = ops.parameter(list(shape), ov.Type.f32, name="x")
    var = Variable(VariableInfo(list(shape), ov.Type.f32, variable_id))
    rv = ops.read_value(ops.constant(init), var) if init is not None else ops.read_value(var)
    add = ops.add(rv, p)
    return ov.Model([ops.result(add)], [ops.assign(add, var)], [p], "accumulator")


def _request(model: ov.Model) -> ov.InferRequest:
    return ov.Core().compile_model(model, "CPU").create_infer_request()


def test_state_accumulates_and_is_readable() -> None:
    rng = np.random.default_rng(0)
    request = _request(_accumulator())
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    for x in xs:
        request.infer({"x": x})
    (state,) = request.query_state()
    assert state.name == "acc"
    np.testing.assert_allclose(state.state.data, xs[0] + xs[1] + xs[2], rtol=1e-6)
    np.testing.assert_allclose(request.get_output_tensor(0).data, sum(xs), rtol=1e-6)


def test_initial_values_from_init_input_or_zeros() -> None:
    init = np.arange(6, dtype=np.float32).reshape(2, 3)
    with_init = _request(_accumulator(init)).query_state()[0]
    np.testing.assert_array_equal(with_init.state.data, init)
    zeros = _request(_accumulator()).query_state()[0]
    assert zeros.state.data.shape == (2, 3) and not zeros.state.data.any()


def test_set_state_is_used_by_the_next_inference() -> None:
    request = _request(_accumulator())
    x = np.ones((2, 3), np.float32)
    start = np.full((2, 3), 10, np.float32)
    request.query_state()[0].state = ov.Tensor(start)
    out = request.infer({"x": x})[0]
    np.testing.assert_array_equal(out, start + x)
    start[:] = -1  # the state holds a copy
    np.testing.assert_array_equal(request.query_state()[0].state.data, np.full((2, 3), 11, np.float32))


def test_reset_returns_to_the_initial_value() -> None:
    init = np.full((2, 3), 5, np.float32)
    request = _request(_accumulator(init))
    x = np.ones((2, 3), np.float32)
    request.infer({"x": x})
    request.infer({"x": x})
    np.testing.assert_array_equal(request.query_state()[0].state.data, init + 2)
    request.query_state()[0].reset()
    np.testing.assert_array_equal(request.query_state()[0].state.data, init)
    np.testing.assert_array_equal(request.infer({"x": x})[0], init + 1)
    request.reset_state()
    np.testing.assert_array_equal(request.infer({"x": x})[0], init + 1)


def test_wrong_shape_or_type_names_the_variable() -> None:
    state = _request(_accumulator(variable_id="memory")).query_state()[0]
    with pytest.raises(InputError, match=r"'memory'.*shape \[3, 3\]"):
        state.state = ov.Tensor(np.zeros((3, 3), np.float32))
    with pytest.raises(InputError, match=r"'memory' holds f32.*string"):
        state.state = ov.Tensor(np.full((2, 3), "a"))
    state.state = ov.Tensor(np.full((2, 3), 4, np.int32))  # numbers are converted, as OpenVINO's CPU plugin does
    assert state.state.element_type == ov.Type.f32 and (state.state.data == 4).all()
    with pytest.raises(InputError, match="'memory'"):
        state.state = ov.Tensor(np.zeros((6,), np.float32))


def test_requests_keep_their_own_state() -> None:
    compiled = ov.Core().compile_model(_accumulator(), "CPU")
    a, b = compiled.create_infer_request(), compiled.create_infer_request()
    x = np.ones((2, 3), np.float32)
    a.infer({"x": x})
    a.infer({"x": x})
    b.infer({"x": 3 * x})
    np.testing.assert_array_equal(a.query_state()[0].state.data, 2 * x)
    np.testing.assert_array_equal(b.query_state()[0].state.data, 3 * x)
    a.reset_state()
    np.testing.assert_array_equal(b.query_state()[0].state.data, 3 * x)


def test_compiled_model_state_is_the_internal_request() -> None:
    compiled = ov.Core().compile_model(_accumulator(), "CPU")
    x = np.ones((2, 3), np.float32)
    compiled({"x": x})
    compiled({"x": x})
    np.testing.assert_array_equal(compiled.query_state()[0].state.data, 2 * x)
    compiled.reset_state()
    np.testing.assert_array_equal(compiled({"x": x})[0], x)


def test_stateless_model_has_no_state() -> None:
    p = ops.parameter([2], ov.Type.f32, name="x")
    request = _request(ov.Model([ops.relu(p)], [p]))
    assert request.query_state() == []
    request.reset_state()


def test_onnx_state_through_inputs_and_outputs_stays_explicit() -> None:
    """ONNX has no variables: a model that carries state as an input/output pair keeps both ports."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "h_in"], ["h_out"])], "carry",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [2])])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(data))
    compiled = ov.Core().compile_model(ov.Core().read_model(data), "CPU")
    request = compiled.create_infer_request()
    assert request.query_state() == [] and len(compiled.inputs) == 2
    h = np.zeros(2, np.float32)
    for step in range(3):
        h = request.infer({"x": np.full(2, step + 1, np.float32), "h_in": h})["h_out"]
    np.testing.assert_array_equal(h, [6, 6])


def test_matches_openvino() -> None:
    ov_ref = pytest.importorskip("openvino")
    init = np.full((2, 3), 5, np.float32)
    xs = [np.full((2, 3), i, np.float32) for i in range(1, 4)]
    ours = _request(_accumulator(init))
    ov.save_model(_accumulator(init), "/tmp/_vinerun_state_test.xml")
    theirs = ov_ref.Core().compile_model("/tmp/_vinerun_state_test.xml", "CPU").create_infer_request()
    for x in xs:
        a, b = ours.infer({"x": x})[0], theirs.infer({"x": x})[0]
        np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(ours.query_state()[0].state.data, theirs.query_state()[0].state.data)
    ours.reset_state()
    theirs.reset_state()
    np.testing.assert_allclose(ours.infer({"x": xs[0]})[0], theirs.infer({"x": xs[0]})[0])
