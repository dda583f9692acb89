"""BATCH's request path: rows gathered into reused (or the device's own) batch arrays, each request's outputs its
own memory, callbacks with their userdata, partial batches after the timeout, no reference cycle per request; and
the GPU (its CPU stand-in) under the THROUGHPUT hint keeps batch x its requests in flight."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.model import Model
from vinerun.plugin_api.infer_request import ISyncInferRequest
from vinerun.plugins.gpu import backend, batch_size
from vinerun.virtual.batch.batcher import Job
from vinerun.virtual.batch.runner import _Slot, gather

F32 = {"INFERENCE_PRECISION_HINT": "f32"}  # the GPU computes in f16 by default
W = np.arange(48, dtype=np.float32).reshape(3, 4, 4) / 10 - 2


def small() -> Model:
    """1x3x4x4 -> 1x3x4x4: a per-channel matmul and a ReLU (each batch row independent)."""
    x = ops.parameter([1, 3, 4, 4], np.float32, name="x")
    y = ops.relu(ops.matmul(x, ops.constant(W), False, False), name="y")
    y.output(0).set_names({"y"})
    return Model([y], [x], "small")


def image(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, 4, 4)).astype(np.float32)


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ W, 0)


@pytest.fixture
def gpu() -> Iterator[None]:
    with backend.stand_in():
        yield


# --- gathering a batch ------------------------------------------------------------------------------
class _Offering(ISyncInferRequest):
    """A device request that offers (or not) its own host input arrays."""

    def __init__(self, arrays: list[np.ndarray] | None):
        self.arrays = arrays

    def host_inputs(self) -> list[np.ndarray] | None:
        return self.arrays

    def infer(self, inputs: list[Any]) -> list[Any]:
        return inputs


def _jobs(n: int) -> list[Job]:
    return [Job([image(k)], lambda outputs, error: None) for k in range(n)]


def test_rows_go_straight_into_the_requests_own_arrays() -> None:
    own = [np.zeros((4, 3, 4, 4), np.float32)]
    jobs = _jobs(4)
    got = gather(_Slot(_Offering(own)), jobs)
    assert got[0] is own[0]
    np.testing.assert_array_equal(own[0], np.concatenate([j.inputs[0] for j in jobs]))


def test_without_arrays_of_its_own_the_slot_keeps_one_set_for_every_batch() -> None:
    slot = _Slot(_Offering([np.zeros((2, 3, 4, 4), np.float32)]))  # the wrong batch: not used
    first = gather(slot, _jobs(4))
    jobs = _jobs(4)[::-1]
    second = gather(slot, jobs)
    assert second[0] is first[0] and second[0] is not slot.request.arrays[0]  # type: ignore[attr-defined]
    np.testing.assert_array_equal(second[0], np.concatenate([j.inputs[0] for j in jobs]))


def test_inputs_that_are_not_row_arrays_are_concatenated() -> None:
    jobs = [Job([image(k).tolist()], lambda outputs, error: None) for k in range(2)]
    got = gather(_Slot(_Offering(None)), jobs)
    np.testing.assert_array_equal(got[0], np.concatenate([image(0), image(1)]))


# --- through the runtime ------------------------------------------------------------------------------
def test_each_request_keeps_its_own_outputs_across_batches(gpu: None) -> None:
    compiled = ov.Core().compile_model(small(), "BATCH:GPU(4)", {**F32, "AUTO_BATCH_TIMEOUT": 60_000})
    assert compiled.get_property("AUTO_BATCH_SIZE") == 4
    requests = [compiled.create_infer_request() for _ in range(8)]
    for k, r in enumerate(requests[:4]):
        r.start_async({"x": image(k)})
    for r in requests[:4]:
        r.wait()
    held = requests[0].get_output_tensor(0).data  # not a copy: must not change when other requests run
    kept = held.copy()
    for k, r in enumerate(requests[1:5], start=10):  # a second batch, without request 0
        r.start_async({"x": image(k)})
    for r in requests[1:5]:
        r.wait()
    np.testing.assert_array_equal(held, kept)
    np.testing.assert_allclose(held, expected(image(0)), rtol=1e-5, atol=1e-6)
    for k, r in enumerate(requests[1:5], start=10):
        np.testing.assert_allclose(r.get_output_tensor(0).data, expected(image(k)), rtol=1e-5, atol=1e-6)


def test_queue_callbacks_get_their_userdata_and_partial_batches_finish(gpu: None) -> None:
    compiled = ov.Core().compile_model(small(), "BATCH:GPU(4)", {**F32, "AUTO_BATCH_TIMEOUT": 20})
    queue = ov.AsyncInferQueue(compiled, 8)
    got: dict[int, np.ndarray] = {}
    queue.set_callback(lambda request, frame: got.__setitem__(frame, request.get_output_tensor(0).data.copy()))
    frames = range(11)  # two full batches and a partial one, run unbatched after the timeout
    for frame in frames:
        queue.start_async({"x": image(frame)}, userdata=frame)
    queue.wait_all()
    assert sorted(got) == list(frames)
    for frame in frames:
        np.testing.assert_allclose(got[frame], expected(image(frame)), rtol=1e-5, atol=1e-6)


def test_errors_in_callbacks_reach_wait_all(gpu: None) -> None:
    compiled = ov.Core().compile_model(small(), "BATCH:GPU(2)", {**F32, "AUTO_BATCH_TIMEOUT": 60_000})
    queue = ov.AsyncInferQueue(compiled, 2)

    def callback(request: ov.InferRequest, frame: int) -> None:
        if frame == 1:
            raise ValueError("frame 1")

    queue.set_callback(callback)
    for frame in range(2):
        queue.start_async({"x": image(frame)}, userdata=frame)
    with pytest.raises(ValueError, match="frame 1"):
        queue.wait_all()


def test_no_reference_cycle_per_request(gpu: None) -> None:
    compiled = ov.Core().compile_model(small(), "BATCH:GPU(4)", {**F32, "AUTO_BATCH_TIMEOUT": 60_000})
    queue = ov.AsyncInferQueue(compiled, 8)
    queue.set_callback(lambda request, frame: None)
    x = image(0)
    for _ in range(8):  # the pools of device requests filled
        queue.start_async({"x": x}, userdata=0)
    queue.wait_all()
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds stays in gc.garbage, to be looked at
        for frame in range(64):
            queue.start_async({"x": x}, userdata=frame)
        queue.wait_all()
        gc.collect()
        jobs = sum(isinstance(o, Job) for o in gc.garbage)  # other tests' threads may leave their own cycles
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert jobs == 0, f"{jobs} of 64 batch jobs were freed only by the cyclic collector"


def test_each_request_reports_the_profile_of_the_execution_that_ran_it(core: ov.Core, fake_device: Any) -> None:
    fake_device("FAKE")
    compiled = core.compile_model(small(), "BATCH:FAKE(2)", {"PERF_COUNT": True, "AUTO_BATCH_TIMEOUT": 60_000})
    requests = [compiled.create_infer_request() for _ in range(2)]
    assert requests[0].get_profiling_info() == []  # nothing ran yet
    for k, r in enumerate(requests):
        r.start_async({"x": image(k)})
    for r in requests:
        r.wait()
        assert {p.exec_type for p in r.get_profiling_info()} == {"ref_FAKE"}


# --- the THROUGHPUT hint ------------------------------------------------------------------------------
def test_throughput_hint_keeps_batch_times_requests_in_flight(gpu: None) -> None:
    core = ov.Core()
    compiled = core.compile_model(small(), "BATCH:GPU(4)", {"PERFORMANCE_HINT": "THROUGHPUT"})
    batched = compiled._impl.batched
    assert batched.get_property("NUM_STREAMS") == 2
    assert compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == \
        4 * batched.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 16


def test_automatic_batching_of_the_throughput_hint(gpu: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_size, "optimal_batch_size", lambda model, device: 4)  # as a real GPU would batch
    core = ov.Core()
    compiled = core.compile_model(small(), "GPU", {**F32, "PERFORMANCE_HINT": "THROUGHPUT",
                                                     "AUTO_BATCH_TIMEOUT": 20})
    assert compiled.get_property("AUTO_BATCH_SIZE") == 4
    jobs = compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    assert jobs == 16
    queue = ov.AsyncInferQueue(compiled)
    assert len(queue) == jobs
    got: dict[int, np.ndarray] = {}
    queue.set_callback(lambda request, frame: got.__setitem__(frame, request.results[0]))
    for frame in range(jobs + 3):  # whole batches, then a partial one after the timeout
        queue.start_async({"x": image(frame)}, userdata=frame)
    queue.wait_all()
    assert sorted(got) == list(range(jobs + 3))
    for frame, out in got.items():
        np.testing.assert_allclose(out, expected(image(frame)), rtol=1e-5, atol=1e-6)
