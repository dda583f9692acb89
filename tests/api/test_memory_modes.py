"""``share_inputs`` / ``share_outputs``: when a request uses the caller's memory and when it copies.

Each test runs with ``ov = vinerun`` and with ``ov = openvino`` (the oracle, when installed).
"""

from __future__ import annotations

import numpy as np
import pytest


def _abs(ov, shape=(1, 4), dtype=np.float32):
    ops = ov.opset13
    p = ops.parameter(list(shape), dtype, name="x")
    return ov.Core().compile_model(ov.Model([ops.abs(p)], [p]), "CPU")


def _x():
    return np.array([[-1.0, 2.0, -3.0, 4.0]], np.float32)


@pytest.mark.parametrize("share", [True, False])
def test_a_fitting_array_is_shared_only_when_asked(ov, share):
    request = _abs(ov).create_infer_request()
    x = _x()
    np.testing.assert_array_equal(request.infer(x, share_inputs=share)[0], np.abs(x))
    assert np.shares_memory(request.get_input_tensor().data, x) == share


@pytest.mark.parametrize("make", [
    lambda: _x().astype(np.float64),             # another element type: converted
    lambda: np.asfortranarray(np.tile(_x(), (3, 1)))[:1],  # not C-contiguous
    lambda: np.frombuffer(_x().tobytes(), np.float32).reshape(1, 4),  # read-only
])
def test_arrays_that_cannot_be_shared_are_copied(ov, make):
    request = _abs(ov).create_infer_request()
    x = make()
    np.testing.assert_array_equal(request.infer(x, share_inputs=True)[0], np.abs(x))
    assert not np.shares_memory(request.get_input_tensor().data, x)


def test_scalars_are_copied_even_when_shared(ov):
    ops = ov.opset13
    p = ops.parameter([], np.float32, name="x")
    request = ov.Core().compile_model(ov.Model([ops.relu(p)], [p]), "CPU").create_infer_request()
    same = np.array(2.0, np.float32)
    request.infer(same, share_inputs=True)
    assert np.shares_memory(request.get_input_tensor().data, same)
    other = np.array(2, np.int32)
    assert request.infer(other, share_inputs=True)[0] == 2.0
    assert not np.shares_memory(request.get_input_tensor().data, other)


def test_copying_writes_into_the_request_tensor(ov):
    request = _abs(ov).create_infer_request()
    held = request.get_input_tensor()
    x = _x()
    request.infer(x)
    np.testing.assert_array_equal(held.data, x)  # the same tensor, refilled
    shared = _x()
    request.infer(shared, share_inputs=True)
    request.infer(np.full((1, 4), 9.0, np.float32))  # copied into the tensor in use: the shared array
    np.testing.assert_array_equal(shared, np.full((1, 4), 9.0))


def test_tensors_are_always_used_as_they_are(ov):
    request = _abs(ov).create_infer_request()
    t = ov.Tensor(_x())
    for share in (True, False):
        request.infer({0: t}, share_inputs=share)
        assert np.shares_memory(request.get_input_tensor().data, t.data)


@pytest.mark.parametrize("share", [True, False])
def test_share_outputs_returns_views_of_the_output_tensor(ov, share):
    request = _abs(ov).create_infer_request()
    result = request.infer(_x(), share_outputs=share)[0]
    np.testing.assert_array_equal(result, np.abs(_x()))
    assert np.shares_memory(result, request.get_output_tensor().data) == share
    assert result.flags["OWNDATA"] is (not share)
    results = request.results[0]
    assert results.flags["OWNDATA"] and not np.shares_memory(results, request.get_output_tensor().data)


def test_compiled_model_call_shares_inputs_by_default(ov):
    compiled = _abs(ov)
    x = _x()
    compiled(x, share_inputs=False)
    assert not np.shares_memory(compiled._infer_request.get_input_tensor().data, x)
    compiled(x)
    assert np.shares_memory(compiled._infer_request.get_input_tensor().data, x)


def test_start_async_copies_so_the_caller_may_reuse_its_array(ov):
    request = _abs(ov).create_infer_request()
    x = _x()
    request.start_async(x)
    x[:] = 100.0  # the copy was taken in start_async
    request.wait()
    np.testing.assert_array_equal(request.get_output_tensor().data, np.abs(_x()))


def test_results_of_an_identity_model_are_copies(ov):
    ops = ov.opset13
    p = ops.parameter([4], np.uint8, name="x")
    compiled = ov.Core().compile_model(ov.Model([p], [p]), "CPU")
    request = compiled.create_infer_request()
    x = np.arange(4, dtype=np.uint8)
    result = request.infer(x, share_inputs=True)[0]
    np.testing.assert_array_equal(result, x)
    assert result.flags["OWNDATA"] and not np.shares_memory(result, x)
