"""Streams: how many per hint, threads per stream, and requests that really run at the same time."""

import os
import threading

import numpy as np
import pytest
import torch

import vinerun as ov
from vinerun.plugin_api.executors import StreamsExecutor
from vinerun.plugin_api.property_table import PropertyValues
from vinerun.plugins.cpu.config import PLUGIN_TABLE
from vinerun.plugins.cpu.streams import init_stream_thread, resolve_streams, throughput_threads_per_stream

from ._async_util import patch_plan, tiny_model, x


def _resolve(cores, **config):
    values = PropertyValues(PLUGIN_TABLE)
    values.set(config)
    s = resolve_streams(values, cores)
    return s.num_streams, s.threads_per_stream, s.num_requests


@pytest.mark.parametrize("cores, config, expected", [
    (2, {}, (1, 2, 1)),
    (2, {"PERFORMANCE_HINT": "LATENCY"}, (1, 2, 1)),
    (2, {"PERFORMANCE_HINT": "THROUGHPUT"}, (2, 1, 4)),
    (2, {"PERFORMANCE_HINT": "CUMULATIVE_THROUGHPUT"}, (2, 1, 4)),
    (8, {"PERFORMANCE_HINT": "THROUGHPUT"}, (8, 1, 16)),
    (32, {"PERFORMANCE_HINT": "THROUGHPUT"}, (8, 4, 16)),
    (2, {"PERFORMANCE_HINT": "THROUGHPUT", "PERFORMANCE_HINT_NUM_REQUESTS": 1}, (1, 2, 1)),
    (8, {"PERFORMANCE_HINT": "THROUGHPUT", "PERFORMANCE_HINT_NUM_REQUESTS": 3}, (3, 2, 3)),
    (2, {"PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_NUM_THREADS": 1}, (1, 1, 2)),
    (2, {"NUM_STREAMS": 2}, (2, 1, 2)),
    (2, {"NUM_STREAMS": 5}, (2, 1, 2)),
    (2, {"NUM_STREAMS": "AUTO"}, (2, 1, 2)),
    (2, {"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 1}, (1, 2, 2)),
    (4, {"INFERENCE_NUM_THREADS": 2}, (1, 2, 1)),
])
def test_streams_per_hint(cores, config, expected):
    assert _resolve(cores, **config) == expected


def test_compiled_model_reports_streams():
    core = ov.Core()
    cores = int(core.get_property("CPU", "RANGE_FOR_STREAMS")[1])
    lat = core.compile_model(tiny_model(), "CPU", {"PERFORMANCE_HINT": "LATENCY"})
    tput = core.compile_model(tiny_model(), "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
    assert lat.get_property("NUM_STREAMS") == 1 and lat.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 1
    streams = cores // throughput_threads_per_stream(cores)
    assert tput.get_property("NUM_STREAMS") == streams
    assert tput.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 2 * streams  # a queued job per stream
    assert len(ov.AsyncInferQueue(tput)) == 2 * streams


def test_stream_thread_count_is_per_thread():
    before = torch.get_num_threads()
    seen = []

    def worker():
        init_stream_thread(1)
        seen.append(torch.get_num_threads())

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [1]
    assert torch.get_num_threads() == before  # the caller's thread keeps its count


def _overlaps(log):
    spans = sorted((start, end) for start, end, *_ in log)
    return any(spans[i + 1][0] < spans[i][1] for i in range(len(spans) - 1))


def test_executor_runs_tasks_in_parallel():
    ex = StreamsExecutor(2, name="test")
    barrier = threading.Barrier(2, timeout=30)  # passes only if both tasks run at the same time
    passed = [threading.Event(), threading.Event()]
    for event in passed:
        ex.submit(lambda e=event: (barrier.wait(), e.set()))
    assert all(e.wait(60) for e in passed)
    ex.shutdown()


def test_throughput_requests_overlap_on_two_streams():
    core = ov.Core()
    compiled = core.compile_model(tiny_model(), "CPU", {"NUM_STREAMS": 2})
    rec = patch_plan(compiled, seconds=0.3)
    queue = ov.AsyncInferQueue(compiled, 2)
    for i in range(4):
        queue.start_async(x(i), i)
    queue.wait_all()
    assert len(rec.log) == 4
    assert _overlaps(rec.log)
    assert {name for _, _, name, _ in rec.log} == {f"CPU:tiny-stream-{i}" for i in range(2)}
    assert {threads for *_, threads in rec.log} == {1}  # each stream: its share of the 2 threads


def test_latency_requests_do_not_overlap():
    core = ov.Core()
    compiled = core.compile_model(tiny_model(), "CPU", {"PERFORMANCE_HINT": "LATENCY"})
    rec = patch_plan(compiled, seconds=0.05)
    queue = ov.AsyncInferQueue(compiled, 3)  # 3 requests, 1 stream: they queue up
    for i in range(3):
        queue.start_async(x(i), i)
    queue.wait_all()
    assert len(rec.log) == 3 and not _overlaps(rec.log)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores for a multi-threaded stream")
def test_multi_threaded_streams_are_shared_by_compiled_models():
    """Each stream thread of several threads has an OpenMP team: two LATENCY models use the same thread, so
    the process does not hold more team threads than cores (see stream_executor)."""
    core, latency = ov.Core(), {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": 2}
    recs = []
    for _ in range(2):
        compiled = core.compile_model(tiny_model(), "CPU", latency)
        recs.append(patch_plan(compiled))
        queue = ov.AsyncInferQueue(compiled, 1)
        queue.start_async(x(0))
        queue.wait_all()
        del queue, compiled  # the model goes; the shared stream stays for the others
    names = {name for rec in recs for _, _, name, _ in rec.log}
    assert len(names) == 1 and next(iter(names)).startswith("CPU:shared-2-threads")
    tput = core.compile_model(tiny_model(), "CPU", {"NUM_STREAMS": 2})  # one-thread streams: the model's own
    assert tput._impl.task_executor().name == "CPU:tiny"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores for a multi-threaded stream")
def test_sync_calls_from_other_threads_run_on_the_shared_stream():
    """The main thread's sync call runs where it is until the stream runs; another thread's goes to the stream
    (one OpenMP team), with its result and its errors handed back."""
    compiled = ov.Core().compile_model(tiny_model(), "CPU", {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": 2})
    rec = patch_plan(compiled)
    stream = "CPU:shared-2-threads-stream-0"
    first = stream if compiled._impl.task_executor().started() else "MainThread"  # shared: earlier tests count
    want = compiled(x(1))[0]
    got: list = []
    worker = threading.Thread(target=lambda: got.append(compiled(x(1))[0]), name="pool-thread")
    worker.start()
    worker.join(60)
    compiled(x(1))  # the stream runs now: the main thread's calls go there too
    assert [name for _, _, name, _ in rec.log] == [first, stream, stream]
    np.testing.assert_array_equal(got[0], want)
    errors: list = []

    def failing_run(inputs, profile=None):
        raise RuntimeError("kernel failed on " + threading.current_thread().name)

    compiled._impl.plan.run = failing_run

    def call():
        try:
            compiled(x(1))
        except Exception as e:  # noqa: BLE001 - checked below
            errors.append(e)

    worker = threading.Thread(target=call)
    worker.start()
    worker.join(60)
    assert len(errors) == 1 and "kernel failed on CPU:shared-2-threads-stream-0" in str(errors[0])
