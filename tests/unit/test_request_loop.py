"""The CPU's native request loop: an AsyncInferQueue whose requests the stream threads run without the GIL."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vinerun as ov
from vinerun.errors import InputError
from vinerun.plugins.cpu import request_loop
from vinerun.plugins.cpu.kernels._dnnl import library

from ._async_util import tiny_model, x

DEMO = os.path.join(os.path.dirname(ov.__file__), "serving", "demo", "cnn", "1", "model.onnx")
pytestmark = pytest.mark.skipif(library() is None or request_loop._steploop is None,
                                reason="needs onednn-cpu-gomp and the compiled step loop")


def compiled(precision: str = "f32", **config):
    return ov.Core().compile_model(DEMO, "CPU", {"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 2,
                                                 "INFERENCE_PRECISION_HINT": precision, **config})


def images(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.random((1, 3, 32, 32), np.float32) for _ in range(n)]


def sync_results(cm, feeds):
    request = cm.create_infer_request()
    return [request.infer({"image": f})[0].copy() for f in feeds]


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_queue_runs_in_the_loop_with_the_sync_results(precision):
    """f32 reorders the NCHW image for the channels-last convolution on the stream thread; bf16 converts it in the
    segment: both give exactly the sync request's results, through a callback and without one."""
    cm = compiled(precision)
    feeds = images(24)
    want = sync_results(cm, feeds)
    queue = ov.AsyncInferQueue(cm, 4)
    assert isinstance(queue._loop, request_loop.NativeRequestLoop)
    got: dict[int, np.ndarray] = {}
    queue.set_callback(lambda request, frame: got.__setitem__(frame, request.results[0]))
    for frame, image in enumerate(feeds):
        queue.start_async({"image": image}, userdata=frame)
    queue.wait_all()
    assert sorted(got) == list(range(24))
    for frame in range(24):
        np.testing.assert_array_equal(got[frame], want[frame])

    plain = ov.AsyncInferQueue(cm, 4)  # no callback: the stream threads never take the GIL
    for image in feeds[:4]:
        plain.start_async({"image": image})
    plain.wait_all()
    for i in range(4):  # slots are taken in order, each once
        np.testing.assert_array_equal(plain[i].results[0], want[i])
        np.testing.assert_array_equal(plain[i].get_input_tensor(0).data, feeds[i])


def test_results_land_in_an_output_tensor_handed_out():
    cm = compiled()
    feeds = images(2)
    want = sync_results(cm, feeds)
    queue = ov.AsyncInferQueue(cm, 1)
    held = queue[0].get_output_tensor(0)
    for image, expected in zip(feeds, want, strict=True):
        queue.start_async({"image": image})
        queue.wait_all()
        np.testing.assert_array_equal(held.data, expected)  # written in place, as every run writes it


def test_a_job_that_does_not_fit_runs_through_python_on_the_stream(monkeypatch):
    cm = compiled()
    feeds = images(6)
    want = sync_results(cm, feeds)
    monkeypatch.setattr(request_loop.NativeRequestLoop, "_addresses", lambda self, inputs, outputs: None)
    queue = ov.AsyncInferQueue(cm, 2)
    got = {}
    queue.set_callback(lambda request, frame: got.__setitem__(frame, request.results[0]))
    for frame, image in enumerate(feeds):
        queue.start_async({"image": image}, userdata=frame)
    queue.wait_all()
    for frame in range(6):
        np.testing.assert_array_equal(got[frame], want[frame])


def test_callback_errors_are_raised_by_wait_all():
    queue = ov.AsyncInferQueue(compiled(), 2)
    assert queue._loop is not None

    def bad(request, userdata):
        raise ValueError(f"bad frame {userdata}")

    queue.set_callback(bad)
    queue.start_async({"image": images(1)[0]}, userdata=7)
    with pytest.raises(ValueError, match="bad frame 7"):
        queue.wait_all()
    queue.set_callback(lambda request, userdata: None)
    queue.start_async({"image": images(1)[0]})
    queue.wait_all()  # the error was raised once


def test_input_errors_raise_in_start_async_and_free_the_slot():
    queue = ov.AsyncInferQueue(compiled(), 1)
    with pytest.raises(InputError, match="image"):
        queue.start_async({"image": np.zeros((2, 3), np.float32)})
    assert queue.is_ready()
    queue.start_async({"image": images(1)[0]})
    queue.wait_all()


def test_a_failed_run_names_the_node():
    queue = ov.AsyncInferQueue(compiled(), 1)
    loop = queue._loop
    layout = loop._layout
    failing = layout.n_reorders + 1  # the second primitive of the segment
    node = layout.seg.steps[layout.seg.table_steps[1]].node
    assert node.friendly_name in str(loop.error(failing))
    assert "reordering an input" in str(loop.error(0))  # the f32 demo's image is reordered first


def test_request_wait_waits_for_its_run():
    cm = compiled()
    feeds = images(1)
    want = sync_results(cm, feeds)
    queue = ov.AsyncInferQueue(cm, 2)
    queue.start_async({"image": feeds[0]})
    queue[0].wait()
    np.testing.assert_array_equal(queue[0].results[0], want[0])
    assert queue.get_idle_request_id() in (0, 1)
    queue.wait_all()
    assert queue[1].wait_for(0)  # never started: done


def test_request_wait_for_times_out_while_its_run_waits(monkeypatch):
    """A job held back (its hook blocks the only stream) is not done within a short wait_for, then is."""
    import threading

    cm = compiled(NUM_STREAMS=1)
    release = threading.Event()
    queue = ov.AsyncInferQueue(cm, 2)
    queue.set_callback(lambda request, userdata: release.wait(10) if userdata == "first" else None)
    queue.start_async({"image": images(1)[0]}, userdata="first")  # the stream waits in its callback
    queue.start_async({"image": images(1)[0]}, userdata="second")  # queued behind it
    assert not queue[1].wait_for(50)
    release.set()
    assert queue[1].wait_for(10_000)
    queue.wait_all()


@pytest.mark.parametrize("config", [{"PERF_COUNT": True}, {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}])
def test_profiling_and_multithreaded_streams_keep_the_python_path(config):
    cm = compiled(**config)
    if cm.get_property("INFERENCE_NUM_THREADS") // cm.get_property("NUM_STREAMS") == 1 and not config.get(
            "PERF_COUNT"):
        pytest.skip("one core: a LATENCY stream has one thread")
    assert ov.AsyncInferQueue(cm, 2)._loop is None


def test_a_model_that_is_not_one_segment_keeps_the_python_path():
    cm = ov.Core().compile_model(tiny_model(), "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
    queue = ov.AsyncInferQueue(cm, 2)
    assert queue._loop is None
    queue.start_async({0: x(-1.0)})
    queue.wait_all()
    np.testing.assert_array_equal(queue[0].results[0], np.zeros((1, 4), np.float32))


def test_dropping_the_queue_ends_its_stream_threads():
    queue = ov.AsyncInferQueue(compiled(), 2)
    threads = list(queue._loop._threads)
    queue.start_async({"image": images(1)[0]})
    queue.wait_all()
    del queue
    gc.collect()
    for t in threads:
        t.join(10)
        assert not t.is_alive()


def test_dropping_a_busy_queue_keeps_the_arrays_its_threads_write():
    """A queue dropped with runs queued: its requests' tensors go, but the stream threads still write into the
    slots' arrays by address; the loop keeps them until it is done (this crashed before)."""
    script = textwrap.dedent(f"""
        import gc, numpy as np, vinerun as ov
        cm = ov.Core().compile_model({DEMO!r}, "CPU", {{"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 2,
                                                       "INFERENCE_PRECISION_HINT": "f32"}})
        image = np.ones((1, 3, 32, 32), np.float32)
        for _ in range(20):
            queue = ov.AsyncInferQueue(cm, 16)
            assert queue._loop is not None
            for i in range(16):
                queue.start_async({{"image": image}})
            del queue
            gc.collect()
            garbage = [np.full((1, 10), 7.0, np.float32) for _ in range(64)]  # reuse the freed memory
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout


def test_exit_with_jobs_in_flight_is_clean():
    script = textwrap.dedent(f"""
        import numpy as np, vinerun as ov
        cm = ov.Core().compile_model({DEMO!r}, "CPU", {{"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 2}})
        queue = ov.AsyncInferQueue(cm, 8)
        assert queue._loop is not None
        for _ in range(64):
            queue.start_async({{"image": np.ones((1, 3, 32, 32), np.float32)}})
        print("started")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "started" in done.stdout


def test_the_servers_queue_completes_every_future_through_the_loop():
    """The server's queue needs a hook after every job (each completes a future): it gets one in the loop too."""
    from vinerun.serving.servable import ServedVersion

    cm = compiled()
    feeds = images(12)
    want = sync_results(cm, feeds)
    served = ServedVersion("demo", 1, DEMO, cm, 4)
    assert served.queue._loop is not None
    futures = [served.submit({"image": image}) for image in feeds]
    for future, expected in zip(futures, want, strict=True):
        np.testing.assert_array_equal(future.result(timeout=30)[0], expected)


def test_latency_of_a_run_in_the_loop():
    """Each request reports its last run's duration (submission to the end of the run), with or without a
    callback; a sync infer on the same request then reports its own."""
    cm = compiled()
    queue = ov.AsyncInferQueue(cm, 2)
    seen = []
    queue.set_callback(lambda request, userdata: seen.append(request.latency))
    queue.start_async({"image": images(1)[0]})
    queue.wait_all()
    assert len(seen) == 1 and seen[0] > 0
    plain = ov.AsyncInferQueue(cm, 1)
    assert plain[0].latency == 0.0
    plain.start_async({"image": images(1)[0]})
    plain.wait_all()
    looped = plain[0].latency
    assert looped > 0
    plain[0].infer({"image": images(1)[0]})
    assert plain[0].latency > 0 and plain[0].latency != looped
