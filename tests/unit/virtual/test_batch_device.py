"""BATCH: single requests gathered into one batched execution, outputs scattered back; the timeout
runs a partial batch unbatched; models that cannot be batched run as is and say why."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from tests.unit.virtual.fake_devices import FakeDevice
from vinerun import opset13 as ops
from vinerun.errors import DeviceError, RequestCancelledError
from vinerun.ir.model import Model
from vinerun.models.cnn import cnn_inputs, cnn_model

W = np.arange(12, dtype=np.float32).reshape(4, 3) - 5


def tiny(shape: tuple[int, ...] = (1, 4), layout: str = "") -> Model:
    x = ops.parameter(list(shape), name="x")
    if layout:
        x.set_layout(ov.Layout(layout))
    y = ops.relu(ops.matmul(x, ops.constant(W), False, False), name="y")
    y.output(0).set_names({"y"})
    return Model([y], [x], "tiny")


def inputs(n: int) -> list[np.ndarray]:
    return [np.full((1, 4), i + 1, np.float32) * np.array([1, -1, 2, 0.5], np.float32) for i in range(n)]


def expected(x: np.ndarray) -> np.ndarray:
    return np.maximum(x @ W, 0)


@pytest.fixture
def fake(fake_device: Callable[..., FakeDevice]) -> FakeDevice:
    return fake_device("FAKE")


def run_async(compiled: ov.CompiledModel, xs: list[np.ndarray]) -> list[np.ndarray]:
    requests = [compiled.create_infer_request() for _ in xs]
    for r, x in zip(requests, xs, strict=True):
        r.start_async({"x": x})
    for r in requests:
        r.wait()
    return [r.get_output_tensor(0).data.copy() for r in requests]


def test_full_batch_is_one_execution_with_outputs_scattered(core: ov.Core, fake: FakeDevice) -> None:
    compiled = core.compile_model(tiny(), "BATCH:FAKE(4)", {"AUTO_BATCH_TIMEOUT": 60_000})
    assert compiled.get_property("AUTO_BATCH_SIZE") == 4
    assert compiled.get_property("AUTO_BATCH_DISABLED_REASON") == ""
    assert compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 4
    assert fake.compile_count == 2  # the model as is (for partial batches) and with batch 4
    assert [list(c.model.inputs[0].get_shape()) for c in fake.compiled] == [[1, 4], [4, 4]]
    xs = inputs(4)
    outs = run_async(compiled, xs)
    assert fake.infer_count == 1
    for x, out in zip(xs, outs, strict=True):
        np.testing.assert_array_equal(out, expected(x))


def test_single_request_completes_after_the_timeout(core: ov.Core, fake: FakeDevice) -> None:
    compiled = core.compile_model(tiny(), "BATCH:FAKE(4)", {"AUTO_BATCH_TIMEOUT": 20})
    x = inputs(1)[0]
    np.testing.assert_array_equal(compiled.create_infer_request().infer({"x": x})[0], expected(x))
    request = compiled.create_infer_request()
    request.start_async({"x": x})
    request.wait()
    np.testing.assert_array_equal(request.get_output_tensor(0).data, expected(x))
    assert fake.infer_count == 2  # each ran unbatched on the model compiled as is


def test_partial_batch_runs_unbatched(core: ov.Core, fake: FakeDevice) -> None:
    compiled = core.compile_model(tiny(), "BATCH:FAKE(4)", {"AUTO_BATCH_TIMEOUT": 20})
    xs = inputs(3)
    for x, out in zip(xs, run_async(compiled, xs), strict=True):
        np.testing.assert_array_equal(out, expected(x))
    assert fake.infer_count == 3


def test_timeout_can_change_after_compilation(core: ov.Core, fake: FakeDevice) -> None:
    compiled = core.compile_model(tiny(), "BATCH:FAKE(2)")
    assert compiled.get_property("AUTO_BATCH_TIMEOUT") == 1000
    compiled.set_property({"AUTO_BATCH_TIMEOUT": 10})
    assert compiled.get_property("AUTO_BATCH_TIMEOUT") == 10
    x = inputs(1)[0]
    np.testing.assert_array_equal(compiled({"x": x})[0], expected(x))


def test_cancelled_request_waiting_for_its_batch(core: ov.Core, fake: FakeDevice) -> None:
    compiled = core.compile_model(tiny(), "BATCH:FAKE(4)", {"AUTO_BATCH_TIMEOUT": 60_000})
    request = compiled.create_infer_request()
    request.start_async({"x": inputs(1)[0]})
    request.cancel()
    with pytest.raises(RequestCancelledError):
        request.wait()
    assert fake.infer_count == 0


@pytest.mark.parametrize(("model", "reason"), [
    (lambda: tiny((2, 4)), "batch dimension 0 is 2, not 1"),
    (lambda: tiny((1, 4), layout="CN"), "batch dimension N is not dimension 0"),
    (lambda: tiny((1, 4), layout="CD"), "without a batch dimension N"),
    (lambda: Model([ops.relu(p := ops.parameter([-1, 4], name="x"))], [p], "dyn"), "dynamic shape"),
    (lambda: Model([ops.reshape(p := ops.parameter([1, 4], name="x"), ops.constant(np.array([1, 2, 2], np.int64)),
                                False)], [p], "fixed"), "reshaping the model to batch 4 failed"),
    (lambda: Model([ops.reduce_sum(p := ops.parameter([1, 4], name="x"), ops.constant(np.array([0], np.int64)),
                                   True)], [p], "mixes"), "does not scale with the batch"),
])
def test_models_that_cannot_be_batched_run_as_is(core: ov.Core, fake: FakeDevice, model: Callable[[], Model],
                                                reason: str) -> None:
    m = model()
    compiled = core.compile_model(m, "BATCH:FAKE(4)", {"AUTO_BATCH_TIMEOUT": 60_000})
    assert reason in compiled.get_property("AUTO_BATCH_DISABLED_REASON")
    assert compiled.get_property("AUTO_BATCH_SIZE") == 1
    assert fake.compile_count == 1
    x = np.ones([d if d > 0 else 3 for d in (m.inputs[0].get_partial_shape().get_min_shape())], np.float32)
    x = x if x.size else np.ones((3, 4), np.float32)
    compiled.create_infer_request().infer({"x": x})  # no batch to wait for: runs at once
    assert fake.infer_count == 1


def test_stateful_model_and_allow_auto_batching_off_are_not_batched(core: ov.Core, fake: FakeDevice,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    from vinerun.models.speech import speech_model

    with caplog.at_level(logging.INFO, logger="vinerun"):
        stateful = core.compile_model(speech_model(features=16, hidden=16, outputs=8), "BATCH:FAKE(4)")
    assert "stateful" in stateful.get_property("AUTO_BATCH_DISABLED_REASON")
    assert any("runs unbatched on FAKE" in r.getMessage() and "stateful" in r.getMessage() for r in caplog.records)
    off = core.compile_model(tiny(), "BATCH:FAKE(4)", {"ALLOW_AUTO_BATCHING": False})
    assert off.get_property("AUTO_BATCH_DISABLED_REASON") == "ALLOW_AUTO_BATCHING is False"


def test_device_string_errors(core: ov.Core, fake: FakeDevice) -> None:
    with pytest.raises(DeviceError, match="BATCH:CPU\\(8\\)"):
        core.compile_model(tiny(), "BATCH")
    with pytest.raises(DeviceError, match="OPTIMAL_BATCH_SIZE"):
        core.compile_model(tiny(), "BATCH:FAKE")
    with pytest.raises(DeviceError, match="cannot read device"):
        core.compile_model(tiny(), "BATCH:FAKE(x)")


def test_cnn_on_cpu_batched_equals_cpu(core: ov.Core) -> None:
    model = cnn_model(image=16, width=8)
    compiled = core.compile_model(model, "BATCH:CPU(4)", {"AUTO_BATCH_TIMEOUT": 60_000})
    assert compiled.get_property("AUTO_BATCH_SIZE") == 4
    reference = core.compile_model(model, "CPU")
    xs = [cnn_inputs(image=16, seed=s)["image"] for s in range(4)]
    queue = ov.AsyncInferQueue(compiled, 4)
    got: dict[int, np.ndarray] = {}
    queue.set_callback(lambda request, i: got.__setitem__(i, request.get_output_tensor(0).data.copy()))
    for i, x in enumerate(xs):
        queue.start_async({"image": x}, i)
    queue.wait_all()
    for i, x in enumerate(xs):
        np.testing.assert_allclose(got[i], reference({"image": x})[0], rtol=1e-4, atol=1e-5)


def test_batched_cpu_model_runs_one_batch_on_every_core_unless_streams_are_given(core: ov.Core) -> None:
    model = cnn_model(image=16, width=8)
    tput = {"PERFORMANCE_HINT": "THROUGHPUT"}
    default = core.compile_model(model, "BATCH:CPU(4)", tput)
    assert default.get_property("NUM_STREAMS") == 1
    assert default.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 4
    cpu = core.compile_model(model, "CPU", {**tput, "NUM_STREAMS": 2})
    two = core.compile_model(model, "BATCH:CPU(4)", {**tput, "NUM_STREAMS": 2})
    assert two.get_property("NUM_STREAMS") == cpu.get_property("NUM_STREAMS")
    key = "OPTIMAL_NUMBER_OF_INFER_REQUESTS"
    assert two.get_property(key) == 4 * cpu.get_property(key)


def test_export_and_import_keep_the_batch(core: ov.Core, fake: FakeDevice) -> None:
    compiled = core.compile_model(tiny(), "BATCH:FAKE(4)", {"AUTO_BATCH_TIMEOUT": 10})
    imported = core.import_model(compiled.export_model(), "BATCH")
    assert imported.get_property("AUTO_BATCH_SIZE") == 4
    assert imported.get_property("AUTO_BATCH_TIMEOUT") == 10
    x = inputs(1)[0]
    np.testing.assert_array_equal(imported({"x": x})[0], expected(x))


def test_cache_dir_caches_the_device_compiles(tmp_path: Path) -> None:
    config = {"CACHE_DIR": str(tmp_path / "cache"), "AUTO_BATCH_TIMEOUT": 10}
    model = cnn_model(image=16, width=8)
    first = ov.Core().compile_model(model, "BATCH:CPU(4)", config)
    blobs = sorted(p.name for p in (tmp_path / "cache").glob("*.blob"))
    assert len(blobs) == 2  # the model as is and with batch 4; BATCH itself is not cached
    again = ov.Core().compile_model(model, "BATCH:CPU(4)", config)
    assert sorted(p.name for p in (tmp_path / "cache").glob("*.blob")) == blobs
    x = cnn_inputs(image=16)["image"]
    np.testing.assert_array_equal(again({"image": x})[0], first({"image": x})[0])
