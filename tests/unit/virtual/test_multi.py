"""MULTI / CUMULATIVE_THROUGHPUT: every device busy, slots per device, policies, the benchmark report."""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.properties.intel_auto import SchedulePolicy
from vinerun.tools.cli import main
from vinerun.virtual.auto.schedule import Cumulative

X = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)


def sigmoid_model() -> ov.Model:
    x = ops.parameter([2, 2], ov.Type.f32, name="x")
    return ov.Model([ops.sigmoid(x)], [x], "sig")


class _Compiled:
    def __init__(self, optimal: int):
        self.optimal = optimal

    def get_property(self, key: str) -> Any:
        return self.optimal


def _schedule(policy: SchedulePolicy) -> Cumulative:
    optimal = {"A": 2, "B": 1}
    return Cumulative("MULTI", lambda d: _Compiled(optimal[d]), ["A", "B"], policy)  # type: ignore[arg-type]


def test_device_priority_fills_devices_in_order_and_queues_when_full():
    schedule = _schedule(SchedulePolicy.DEVICE_PRIORITY)
    got: list[str] = []
    for _ in range(4):
        schedule.acquire(got.append)
    assert got == ["A", "A", "B"]  # the 4th job waits for a slot
    assert schedule.optimal_requests() == 3
    schedule.release("B")
    assert got == ["A", "A", "B", "B"]  # the freed slot went straight to the waiting job
    schedule.release("A")
    assert schedule.busy == {"A": 1, "B": 1}


def test_round_robin_takes_turns():
    schedule = _schedule(SchedulePolicy.ROUND_ROBIN)
    got: list[str] = []
    for _ in range(3):
        schedule.acquire(got.append)
    assert got == ["A", "B", "A"]


def test_multi_keeps_a_second_device_busy_while_the_first_is(core, fake_device):
    gate = threading.Event()
    fake_device("BUSY", infer_gate=gate)
    free = fake_device("FREE")
    compiled = core.compile_model(sigmoid_model(), "MULTI:BUSY,FREE")
    assert compiled.get_property("EXECUTION_DEVICES") == ["BUSY", "FREE"]
    assert compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 2
    first, second = compiled.create_infer_request(), compiled.create_infer_request()
    first.start_async({"x": X})    # BUSY's only slot, held by the gate
    second.start_async({"x": X})   # so this one runs on FREE
    second.wait()
    assert free.infer_count == 1 and first._impl.last_device is None
    gate.set()
    first.wait()
    assert compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE") == {"BUSY": 1, "FREE": 1}
    for request in (first, second):
        np.testing.assert_allclose(request.get_output_tensor(0).data, 1 / (1 + np.exp(-X)), rtol=1e-6)


def test_auto_with_cumulative_hint_is_multi(core, fake_device):
    fake_device("ACC", optimal_requests=2)
    compiled = core.compile_model(sigmoid_model(), "AUTO:ACC,CPU", {"PERFORMANCE_HINT": "CUMULATIVE_THROUGHPUT",
                                                                    "SCHEDULE_POLICY": "ROUND_ROBIN"})
    assert compiled.get_property("EXECUTION_DEVICES") == ["ACC", "CPU"]
    queue = ov.AsyncInferQueue(compiled)
    assert len(queue) == 2 + int(core.compile_model(sigmoid_model(), "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
                                 .get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    for i in range(12):
        queue.start_async({"x": X}, userdata=i)
    queue.wait_all()
    assert sum(compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE").values()) == 12


def test_multi_reruns_a_failed_inference_on_another_device(core, fake_device):
    fake_device("FLAKY", infer_failures=1)
    compiled = core.compile_model(sigmoid_model(), "MULTI:FLAKY,CPU")
    request = compiled.create_infer_request()
    np.testing.assert_allclose(request.infer({"x": X})[0], 1 / (1 + np.exp(-X)), rtol=1e-6)
    assert request._impl.last_device == "CPU"


def test_multi_drops_a_device_that_fails_to_compile(core, fake_device):
    fake_device("BROKEN", compile_error=RuntimeError("driver missing"))
    compiled = core.compile_model(sigmoid_model(), "MULTI:BROKEN,CPU")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]


@pytest.fixture(scope="module")
def affine_sigmoid(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small affine + sigmoid model, which GNA runs."""
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 16], name="x")
    w = ops.constant((rng.standard_normal((16, 8)) * 0.1).astype(np.float32), name="w")
    b = ops.constant((rng.standard_normal((1, 8)) * 0.1).astype(np.float32), name="b")
    y = ops.sigmoid(ops.add(ops.matmul(x, w, False, False, name="fc"), b, name="bias"), name="act")
    y.output(0).set_names({"y"})
    path = str(tmp_path_factory.mktemp("multi") / "affine_sigmoid.xml")
    ov.serialize(ov.Model([y], [x], "affine_sigmoid"), path)
    return path


def test_benchmark_reports_requests_per_device(capsys, affine_sigmoid, tmp_path):
    rc = main(["benchmark", "-m", affine_sigmoid, "-d", "MULTI:CPU,GNA", "-niter", "24",
               "-report_folder", str(tmp_path), "-json_stats"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Execution Devices:['CPU', 'GNA']" in out
    line = re.search(r"Executed requests per device: CPU: (\d+) \([\d.]+%\), GNA: (\d+) \([\d.]+%\)", out)
    assert line is not None, out
    count = int(re.search(r"Count:\s+(\d+) iterations", out).group(1))
    assert int(line.group(1)) + int(line.group(2)) == count + 1  # + the first inference
    assert "GNA: " in (tmp_path / "benchmark_report.json").read_text()
