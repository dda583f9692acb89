"""The asynchronous API: start_async / wait / wait_for / cancel / callbacks, and AsyncInferQueue."""

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import vinerun as ov
from vinerun.errors import CallbackError, InputError, RequestBusyError, RequestCancelledError

from ._async_util import patch_plan, tiny_model, x


@pytest.fixture
def compiled():
    return ov.Core().compile_model(tiny_model(), "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})


def test_start_async_wait_and_results(compiled):
    request = compiled.create_infer_request()
    request.start_async({"x": x(-2.0)})
    request.wait()
    assert np.array_equal(request.results[0], np.zeros((1, 4), np.float32))
    request.start_async(x(3.0))
    assert request.wait_for(60_000) is True
    assert request.get_output_tensor(0).data[0, 0] == 3.0
    assert request.latency > 0


def test_callback_gets_userdata(compiled):
    request = compiled.create_infer_request()
    seen = []
    request.set_callback(lambda userdata: seen.append((userdata, float(request.results[0].sum()))), "from set")
    request.start_async(x(1.0))
    request.wait()
    request.start_async(x(2.0), userdata="from start")
    request.wait()
    assert seen == [("from set", 4.0), ("from start", 8.0)]
    assert request.userdata == "from start"


def test_callback_may_start_the_same_request_again(compiled):
    """As in OpenVINO: the request is idle when its callback runs, so the callback can chain runs."""
    request = compiled.create_infer_request()
    values, chained = [], threading.Event()

    def again(userdata):
        values.append(float(request.results[0][0, 0]))
        if len(values) < 5:
            request.start_async(x(float(len(values) + 1)))
        else:
            chained.set()

    request.set_callback(again, None)
    request.start_async(x(1.0))
    assert chained.wait(60)
    request.wait()
    assert values == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_callback_that_raises_is_reported_not_lost(compiled, caplog):
    request = compiled.create_infer_request()

    def bad(userdata):
        raise KeyError(userdata)

    request.set_callback(bad, "frame-7")
    request.start_async(x())
    with pytest.raises(CallbackError, match="KeyError") as info:
        request.wait()
    assert isinstance(info.value.__cause__, KeyError)
    assert "frame-7" in caplog.text  # logged when it happened
    with pytest.raises(CallbackError):  # kept until the next start, as OpenVINO
        request.wait()
    request.set_callback(lambda userdata: None)
    request.start_async(x())
    request.wait()


def test_input_errors_raise_in_start_async(compiled):
    request = compiled.create_infer_request()
    with pytest.raises(InputError):
        request.start_async(np.ones((2, 2), np.float32))
    request.wait()  # nothing started: returns


def test_wait_for_times_out_then_completes(compiled):
    rec = patch_plan(compiled, block=True)
    request = compiled.create_infer_request()
    request.start_async(x())
    assert rec.started.wait(60)
    assert request.wait_for(0) is False
    assert request.wait_for(20) is False
    with pytest.raises(RequestBusyError):
        request.infer(x())
    with pytest.raises(RequestBusyError):
        request.start_async(x())
    rec.release.set()
    assert request.wait_for(60_000) is True
    assert request.results[0].shape == (1, 4)


def test_cancel_mid_flight(compiled):
    rec = patch_plan(compiled, block=True)
    request = compiled.create_infer_request()
    called = []
    request.set_callback(called.append, "ud")
    request.start_async(x())
    assert rec.started.wait(60)  # running now
    request.cancel()
    rec.release.set()
    with pytest.raises(RequestCancelledError, match="canceled"):
        request.wait()
    assert called == []
    request.cancel()  # idle: no effect on the next run
    request.start_async(x())
    request.wait()
    assert called == ["ud"]


def test_cancel_before_running(compiled):
    compiled = ov.Core().compile_model(tiny_model(), "CPU", {"PERFORMANCE_HINT": "LATENCY"})  # one stream
    rec = patch_plan(compiled, block=True)
    first, second = compiled.create_infer_request(), compiled.create_infer_request()
    first.start_async(x())
    assert rec.started.wait(60)
    second.start_async(x())  # queued behind the first on the only stream
    second.cancel()
    rec.release.set()
    first.wait()
    with pytest.raises(RequestCancelledError):
        second.wait()
    assert len(rec.log) == 1  # the cancelled request never ran


def test_queue_callbacks_userdata_and_accessors(compiled):
    queue = ov.AsyncInferQueue(compiled)
    assert len(queue) == compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
    results = {}
    lock = threading.Lock()

    def callback(request, userdata):
        with lock:
            results[userdata] = float(request.results[0][0, 0])

    queue.set_callback(callback)
    for i in range(10):
        queue.start_async({0: x(float(i))}, userdata=i)
    queue.wait_all()
    assert results == {i: float(i) for i in range(10)}
    assert queue.is_ready() and 0 <= queue.get_idle_request_id() < len(queue)
    assert [type(r) for r in queue] == [ov.InferRequest] * len(queue) and queue[0] is list(queue)[0]
    assert set(queue.userdata) <= set(range(10))


def test_queue_with_jobs_and_callback_error(compiled, caplog):
    queue = ov.AsyncInferQueue(compiled, jobs=3)
    assert len(queue) == 3

    def callback(request, userdata):
        if userdata == 2:
            raise ValueError("bad frame")

    queue.set_callback(callback)
    for i in range(5):
        queue.start_async(x(), i)
    with pytest.raises(ValueError, match="bad frame"):  # the callback's own exception, as OpenVINO's queue
        queue.wait_all()
    assert "bad frame" in caplog.text
    queue.wait_all()  # reported once
    with pytest.raises(Exception, match="jobs"):
        ov.AsyncInferQueue(compiled, jobs=-1)


def test_queue_reports_inference_errors(compiled):
    queue = ov.AsyncInferQueue(compiled, 2)
    impl = compiled._impl

    def failing(inputs, profile=None):
        raise RuntimeError("kernel exploded")

    impl.plan.run = failing
    called = []
    queue.set_callback(lambda r, u: called.append(u))
    queue.start_async(x(), "a")
    with pytest.raises(RuntimeError, match="kernel exploded"):
        queue.wait_all()
    assert called == []


def test_compiled_model_call_still_works(compiled):
    request = compiled.create_infer_request()
    request.start_async(x(5.0))
    request.wait()
    assert compiled(x(2.0))[0][0, 0] == 2.0


def _run_script(body: str) -> subprocess.CompletedProcess:
    script = textwrap.dedent('''
        import numpy as np, vinerun as ov
        from vinerun import opset13 as ops
        p = ops.parameter([1, 16, 96, 96], ov.Type.f32, name="x")
        w = ops.constant(np.random.default_rng(0).standard_normal((16, 16, 3, 3)).astype(np.float32))
        y = p
        for _ in range(12):
            y = ops.relu(ops.convolution(y, w, [1, 1], [1, 1], [1, 1], [1, 1]))
        compiled = ov.Core().compile_model(ov.Model([y], [p], "busy"), "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
        data = np.ones((1, 16, 96, 96), np.float32)
    ''') + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)


def test_exit_while_queue_busy_does_not_hang():
    proc = _run_script('''
        queue = ov.AsyncInferQueue(compiled, 4)
        queue.set_callback(lambda r, u: None)
        for i in range(40):
            if queue.is_ready():
                queue.start_async({0: data}, i)
        print("exiting")
    ''')
    assert proc.returncode == 0, proc.stderr
    assert "exiting" in proc.stdout


def test_dropping_a_busy_queue_does_not_hang():
    proc = _run_script('''
        import gc
        queue = ov.AsyncInferQueue(compiled, 4)
        done = []
        queue.set_callback(lambda r, u: done.append(u))
        for i in range(4):
            queue.start_async({0: data}, i)
        del queue
        gc.collect()
        request = compiled.create_infer_request()   # the model still works afterwards
        request.start_async({0: data})
        request.wait()
        print("ok", request.results[0].shape)
        del compiled, request
        gc.collect()
    ''')
    assert proc.returncode == 0, proc.stderr
    assert "ok (1, 16, 96, 96)" in proc.stdout
