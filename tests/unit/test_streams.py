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


def _resolve(cores, prefer=0, **config):
    values = PropertyValues(PLUGIN_TABLE)
    values.set(config)
    s = resolve_streams(values, cores, prefer)
    return s.num_streams, s.threads_per_stream, s.num_requests


@pytest.mark.parametrize("cores, config, expected", [
    (2, {}, (1, 2, 1)),
    (2, {"PERFORMANCE_HINT": "LATENCY"}, (1, 2, 1)),
    (2, {"PERFORMANCE_HINT": "THROUGHPUT"}, (2, 1, 4)),
    (2, {"PERFORMANCE_HINT": "CUMULATIVE_THROUGHPUT"}, (2, 1, 4)),
    (8, {"PERFORMANCE_HINT": "THROUGHPUT"}, (4, 2, 8)),  # no preference: 4 lowered to 2 (4 streams >= 2)
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


@pytest.mark.parametrize("cores, prefer, expected", [
    (16, 1, (16, 1, 32)),  # compute-bound (ResNet-50 on a 16-core AMX Xeon: openvino's 16 streams)
    (16, 2, (8, 2, 16)),
    (16, 0, (4, 4, 8)),
    (20, 0, (5, 4, 10)),
    (15, 0, (5, 3, 10)),  # 5 threads would leave 3 streams: lowered to 3
    (64, 1, (64, 1, 128)),
    (2, 1, (2, 1, 4)),
    (2, 0, (2, 1, 4)),  # what openvino picks on this 2-core machine for every zoo model
    (1, 2, (1, 1, 2)),
])
def test_throughput_streams_follow_the_models_memory_pressure(cores, prefer, expected):
    assert _resolve(cores, prefer, PERFORMANCE_HINT="THROUGHPUT") == expected


def test_pinned_streams_run_on_their_own_cpus():
    from vinerun.plugins.cpu.streams import StreamsConfig, stream_executor

    cpus = tuple(sorted(os.sched_getaffinity(0)))
    config = StreamsConfig(len(cpus), 1, 2 * len(cpus), cpus, pinned=True)
    executor = stream_executor("pinned-test", config)
    seen, lock, barrier = [], threading.Lock(), threading.Barrier(len(cpus) + 1)

    def task():
        with lock:
            seen.append(tuple(sorted(os.sched_getaffinity(0))))
        barrier.wait(timeout=10)  # every stream busy at once: each task runs on a different stream

    for _ in cpus:
        executor.submit(task)
    barrier.wait(timeout=10)
    executor.shutdown()
    assert sorted(seen) == [(c,) for c in cpus]
    assert os.sched_getaffinity(0) == set(cpus)  # the caller is not pinned


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


def test_cpus_grouped_by_core_for_hyper_threading(tmp_path, monkeypatch):
    from vinerun.plugins.cpu import cpu_topology

    for cpu, siblings in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}.items():
        folder = tmp_path / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "thread_siblings_list").write_text(siblings + "\n")
    monkeypatch.setattr(cpu_topology, "allowed_cpus", lambda: [0, 1, 2, 3])
    assert cpu_topology.core_groups([0, 1, 2, 3], str(tmp_path)) == [[0, 2], [1, 3]]
    assert cpu_topology.usable_cpus(False, str(tmp_path)) == ([0, 1], False)
    assert cpu_topology.usable_cpus(True, str(tmp_path)) == ([0, 2, 1, 3], True)  # a stream of 2 takes a core


def test_memory_pressure_of_compute_and_memory_bound_models():
    import vinerun.opset13 as ops
    from vinerun.plugins.cpu import mem_pressure as mp

    x = ops.parameter([1, 16, 32, 32], np.float32)
    conv = ops.convolution(x, ops.constant(np.ones((16, 16, 3, 3), np.float32)), [1, 1], [1, 1], [1, 1], [1, 1])
    compute = mp.mem_pressure(ov.Model([conv], [x]), l2_bytes=1 << 20)
    assert compute.worst == mp.UNKNOWN and compute.compute_convs == 1.0
    assert mp.preferred_threads(compute, isa=2.0) == 1
    assert mp.preferred_threads(compute, isa=2.0, smt_pairs=True) == 2
    t = ops.parameter([4096, 1024], np.float32)  # 4096 x 1024 in, 4096 x 4096 out: 80 MB through a 1 MB L2
    wide = ops.matmul(t, ops.constant(np.ones((1024, 4096), np.float32)))
    memory = mp.mem_pressure(ov.Model([wide], [t]), l2_bytes=1 << 20)
    assert memory.worst < 0.02 and mp.preferred_threads(memory, isa=2.0) == 0
    row = ops.parameter([8, 64], np.float32)
    small = ops.matmul(row, ops.constant(np.ones((64, 64), np.float32)))
    light = mp.mem_pressure(ov.Model([small], [row]), l2_bytes=1 << 20)
    assert light.worst > 100 and mp.preferred_threads(light, isa=2.0) == 1
    from vinerun.plugins.cpu.cpu_topology import parse_cpu_list

    assert parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
