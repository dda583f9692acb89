"""InferRequest, AsyncInferQueue and VariableState as OpenVINO's Python API has them.

Each test runs with ``ov = vinerun`` and with ``ov = openvino`` (the oracle, when installed): the same
assertions must hold for both.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest


def _relu(ov, shape=(2, 2), name="x"):
    ops = ov.opset13
    p = ops.parameter(list(shape), np.float32, name=name)
    relu = ops.relu(p)
    relu.output(0).set_names({"y"})
    return ov.Model([relu], [p], "relu")


def _add(ov, shape=(2, 2)):
    ops = ov.opset13
    a = ops.parameter(list(shape), np.float32, name="a")
    b = ops.parameter(list(shape), np.float32, name="b")
    out = ops.add(a, b)
    out.output(0).set_names({"sum"})
    return ov.Model([out], [a, b], "add")


def _request(ov, model):
    return ov.Core().compile_model(model, "CPU").create_infer_request()


def test_a_new_request_holds_tensors_of_the_static_shapes(ov):
    request = _request(ov, _relu(ov))
    assert list(request.get_input_tensor().shape) == [2, 2]
    out = request.get_output_tensor()
    assert list(out.shape) == [2, 2] and out.element_type == ov.Type.f32
    assert len(request.results) == 1 and request.results[0].shape == (2, 2)
    # the output tensor handed out before any run receives the results in place
    request.infer({"x": np.full((2, 2), 3.0, np.float32)})
    np.testing.assert_array_equal(out.data, np.full((2, 2), 3.0))


def test_dynamic_dimensions_start_at_zero(ov):
    ops = ov.opset13
    p = ops.parameter(ov.PartialShape([-1, 2]), np.float32, name="x")
    request = _request(ov, ov.Model([ops.relu(p)], [p]))
    assert list(request.get_input_tensor().shape) == [0, 2]
    request.infer([np.ones((3, 2), np.float32)])
    assert list(request.get_output_tensor().shape) == [3, 2]


def test_inputs_left_out_keep_the_request_tensors(ov):
    request = _request(ov, _add(ov))
    request.get_input_tensor(1).data[:] = 10.0
    res = request.infer([np.ones((2, 2), np.float32)])  # a shorter list sets the first inputs only
    np.testing.assert_array_equal(res[0], np.full((2, 2), 11.0))
    np.testing.assert_array_equal(request.infer()[0], np.full((2, 2), 11.0))


def test_infer_takes_dicts_lists_tuples_single_values_and_array_likes(ov):
    request = _request(ov, _add(ov))
    a, b = np.ones((2, 2), np.float32), np.full((2, 2), 2.0, np.float32)
    for inputs in ({"a": a, "b": b}, {0: a, 1: b}, [a, b], (a, b), {request.model_inputs[0]: a, 1: ov.Tensor(b)}):
        np.testing.assert_array_equal(request.infer(inputs)[0], a + b)

    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.full((2, 2), -1.0)

    single = _request(ov, _relu(ov))
    np.testing.assert_array_equal(single.infer(ArrayLike())[0], np.zeros((2, 2)))
    np.testing.assert_array_equal(single.infer(np.full((2, 2), 4.0, np.float64))[0], np.full((2, 2), 4.0))


def test_a_list_of_plain_numbers_is_one_input(ov):
    ops = ov.opset13
    p = ops.parameter([3], np.float64, name="x")
    request = _request(ov, ov.Model([ops.relu(p)], [p]))
    np.testing.assert_array_equal(request.infer([1.0, -2.0, 3.0])[0], [1.0, 0.0, 3.0])


def test_scalars_for_a_scalar_input(ov):
    ops = ov.opset13
    p = ops.parameter([], np.float32, name="x")
    request = _request(ov, ov.Model([ops.relu(p)], [p]))
    for value in (np.float32(2.0), 2.0, np.array(2.0, np.float32)):
        assert request.infer(value)[0] == 2.0


def test_bad_inputs_raise_type_errors(ov):
    request = _request(ov, _relu(ov))
    with pytest.raises(TypeError, match="Incompatible inputs of type"):
        request.infer(object())
    with pytest.raises(TypeError, match="Incompatible key type for input: 1.5"):
        request.infer({1.5: np.ones((2, 2), np.float32)})
    with pytest.raises(RuntimeError, match="Port for tensor name nope was not found"):
        request.infer({"nope": np.ones((2, 2), np.float32)})


def test_get_and_set_tensors_by_name_port_and_index(ov):
    model = _relu(ov)
    compiled = ov.Core().compile_model(model, "CPU")
    request = compiled.create_infer_request()
    x = ov.Tensor(np.full((2, 2), 5.0, np.float32))
    request.set_tensor("x", x)
    assert np.shares_memory(request.get_tensor("x").data, x.data)
    request.set_tensor(model.inputs[0], x)  # the port of the model the compiled model came from
    assert np.shares_memory(request.get_tensor(compiled.inputs[0]).data, x.data)
    request.set_input_tensor(x)
    request.set_input_tensor(0, x)
    request.set_input_tensors({0: x})
    request.infer()
    np.testing.assert_array_equal(request.get_tensor("y").data, x.data)
    np.testing.assert_array_equal(request.get_tensor(model.outputs[0]).data, x.data)
    with pytest.raises(RuntimeError, match="Port for tensor name nope was not found"):
        request.get_tensor("nope")


def test_results_are_written_into_a_user_output_tensor(ov):
    request = _request(ov, _relu(ov))
    out = ov.Tensor(np.zeros((2, 2), np.float32))
    request.set_output_tensor(out)
    request.infer({0: np.full((2, 2), 7.0, np.float32)})
    np.testing.assert_array_equal(out.data, np.full((2, 2), 7.0))
    assert np.shares_memory(request.get_output_tensor(0).data, out.data)
    other = ov.Tensor(np.zeros((2, 2), np.float32))
    request.set_tensors({"y": other})
    request.set_output_tensors({0: other})
    request.infer({0: np.ones((2, 2), np.float32)})
    np.testing.assert_array_equal(other.data, np.ones((2, 2)))
    with pytest.raises(RuntimeError):
        request.set_output_tensor(ov.Tensor(np.zeros((3, 3), np.float32)))
    with pytest.raises(RuntimeError):
        request.set_input_tensor(ov.Tensor(np.zeros((2, 2), np.int32)))


def test_index_free_getters_need_a_single_port(ov):
    request = _request(ov, _add(ov))
    with pytest.raises(RuntimeError):
        request.get_input_tensor()
    assert list(request.get_input_tensor(1).shape) == [2, 2]
    assert len(request.input_tensors) == 2 and len(request.output_tensors) == 1
    assert [p.get_names() for p in request.model_inputs] == [{"a"}, {"b"}]


def test_batched_input_tensors(ov):
    ops = ov.opset13
    p = ops.parameter([3, 2], np.float32, name="x")
    p.set_layout(ov.Layout("N..."))
    out = ops.add(p, ops.constant(np.float32(1.0)))
    request = _request(ov, ov.Model([out], [p]))
    items = [ov.Tensor(np.full((1, 2), float(i), np.float32)) for i in range(3)]
    request.set_input_tensors(items)
    with pytest.raises(RuntimeError, match="get_tensor shall not be used together with batched"):
        request.get_tensor("x")
    result = request.get_output_tensor()
    request.infer()
    np.testing.assert_array_equal(result.data, [[1, 1], [2, 2], [3, 3]])
    items[1].data[:] = 10.0  # read again at each run
    request.infer()
    np.testing.assert_array_equal(result.data[1], [11, 11])
    with pytest.raises(RuntimeError):
        request.set_input_tensors(items[:2])  # the batch is 3


def test_start_async_wait_callback_userdata_latency(ov):
    request = _request(ov, _relu(ov))
    seen = []
    request.set_callback(lambda userdata: seen.append(userdata), "set")
    request.start_async({0: np.ones((2, 2), np.float32)}, userdata="start")
    request.wait()
    assert seen == ["start"] and request.userdata == "start"
    assert request.wait_for(0) and request.latency > 0
    np.testing.assert_array_equal(request.results[0], np.ones((2, 2)))
    assert request.get_compiled_model() is not None


def test_userdata_without_a_callback_warns(ov):
    request = _request(ov, _relu(ov))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        request.start_async(np.ones((2, 2), np.float32), userdata=5)
        request.wait()
    assert any("There is no callback function!" in str(w.message) for w in caught)
    assert request.userdata is None


def test_queue_runs_jobs_with_userdata(ov):
    compiled = ov.Core().compile_model(_relu(ov), "CPU")
    queue = ov.AsyncInferQueue(compiled, 3)
    assert len(queue) == 3 and queue.userdata == [None] * 3 and queue.is_ready()
    done: dict = {}
    lock = threading.Lock()

    def callback(request, userdata):
        with lock:
            done[userdata] = float(request.get_output_tensor(0).data[0, 0])

    queue.set_callback(callback)
    for i in range(7):
        queue.start_async({"x": np.full((2, 2), float(i), np.float32)}, i)
    queue.wait_all()
    assert done == {i: float(i) for i in range(7)}
    assert all(isinstance(r, ov.InferRequest) and r.userdata is None for r in queue)
    idle = queue.get_idle_request_id()
    assert queue[idle].wait_for(0)
    queue.start_async()  # no inputs: the request's current tensors
    queue.wait_all()


def test_queue_raises_the_callback_exception_itself(ov):
    compiled = ov.Core().compile_model(_relu(ov), "CPU")
    queue = ov.AsyncInferQueue(compiled, 1)

    def callback(request, _):
        request + 21

    queue.set_callback(callback)
    with pytest.raises(TypeError, match="unsupported operand"):
        queue.start_async({"x": np.ones((2, 2), np.float32)})
        queue.wait_all()


def test_variable_state_name_state_and_reset(ov):
    ops = ov.opset13
    x = ops.parameter([2], np.float32, name="x")
    init = ops.constant(np.zeros(2, np.float32))
    rv = ops.read_value(init, "acc", np.float32, [2])
    add = ops.add(rv, x)
    model = ov.Model(results=[ops.result(add)], sinks=[ops.assign(add, "acc")], parameters=[x])
    request = _request(ov, model)
    (state,) = request.query_state()
    assert state.name == "acc"
    one = np.ones(2, np.float32)
    request.infer({0: one})
    np.testing.assert_array_equal(request.infer({0: one})[0], [2, 2])
    np.testing.assert_array_equal(state.state.data, [2, 2])
    state.state = ov.Tensor(np.full(2, 5.0, np.float32))
    np.testing.assert_array_equal(request.infer({0: one})[0], [6, 6])
    state.reset()
    np.testing.assert_array_equal(request.infer({0: one})[0], [1, 1])
    request.reset_state()
    np.testing.assert_array_equal(request.infer({0: one})[0], [1, 1])
    live = state.state  # the state's memory: writes to it change the state
    live.data[:] = 10.0
    np.testing.assert_array_equal(request.infer({0: one})[0], [11, 11])
    given = ov.Tensor(np.array([3, 3], np.int32))  # converted to the variable's f32, and copied
    state.state = given
    given.data[:] = 100
    assert state.state.element_type == ov.Type.f32
    np.testing.assert_array_equal(request.infer({0: one})[0], [4, 4])


def test_profiling_info_status_is_an_integer_enum(ov):
    """``ProfilingInfo.Status``: NOT_RUN 0, OPTIMIZED_OUT 1, EXECUTED 2, printed ``Status.EXECUTED``; a fresh
    ProfilingInfo has NOT_RUN."""
    compiled = ov.Core().compile_model(_relu(ov), "CPU", {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    request.infer({0: np.ones((2, 2), np.float32)})
    status = ov.ProfilingInfo.Status
    info = request.get_profiling_info()
    assert info and all(isinstance(p.status, status) for p in info)
    assert any(p.status == status.EXECUTED for p in info)
    s = status.EXECUTED
    assert (int(s), s.name, str(s), f"{s}") == (2, "EXECUTED", "Status.EXECUTED", "Status.EXECUTED")
    assert (int(status.NOT_RUN), int(status.OPTIMIZED_OUT)) == (0, 1)
    assert ov.ProfilingInfo().status == status.NOT_RUN
