"""AUTO: candidates, capability checks, the CPU start-up helper, runtime fallback, the request API."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import DeviceError, InferenceError, NotSupportedError, PropertyError, RequestCancelledError
from vinerun.op.util import Variable, VariableInfo
from vinerun.virtual.auto import execution_device, outputs_from_helper
from vinerun.virtual.auto.candidates import model_precision, parse_priorities

X = np.array([[0.5, -1.0], [2.0, 0.0]], np.float32)


def sigmoid_model() -> ov.Model:
    x = ops.parameter([2, 2], ov.Type.f32, name="x")
    return ov.Model([ops.sigmoid(x)], [x], "sig")


def expected() -> np.ndarray:
    return 1 / (1 + np.exp(-X))


def accumulator() -> ov.Model:
    p = ops.parameter([2, 2], ov.Type.f32, name="x")
    var = Variable(VariableInfo([2, 2], ov.Type.f32, "acc"))
    add = ops.add(ops.read_value(var), p)
    return ov.Model([ops.result(add)], [ops.assign(add, var)], [p], "acc")


# --- candidates -------------------------------------------------------------------------------
def test_priorities_are_parsed_with_exclusions():
    assert parse_priorities("GNA, cpu ,-GPU") == (["GNA", "CPU"], {"GPU"})
    with pytest.raises(DeviceError, match="BATCH syntax"):
        parse_priorities("CPU(4)")


def test_default_order_prefers_accelerators_and_skips_gna(core, fake_device):
    fake_device("ACC")
    compiled = core.compile_model(sigmoid_model(), "AUTO", {"ENABLE_STARTUP_FALLBACK": False})
    assert compiled.get_property("EXECUTION_DEVICES") == ["ACC"]
    assert compiled._impl.devices == ["ACC", "CPU"]  # GNA is used only when named


def test_gpu_types_rank_before_other_accelerators(core, fake_device):
    fake_device("NPU")
    fake_device("GPU", device_type="INTEGRATED")
    compiled = core.compile_model(sigmoid_model(), "AUTO", {"ENABLE_STARTUP_FALLBACK": False})
    assert compiled._impl.devices == ["GPU", "NPU", "CPU"]


def test_named_devices_and_exclusion(core, fake_device):
    fake_device("ACC")
    assert core.compile_model(sigmoid_model(), "AUTO:CPU,ACC").get_property("EXECUTION_DEVICES") == ["CPU"]
    assert core.compile_model(sigmoid_model(), "AUTO:-ACC").get_property("EXECUTION_DEVICES") == ["CPU"]
    gna = core.compile_model(sigmoid_model(), "AUTO", {"MULTI_DEVICE_PRIORITIES": "GNA"})
    assert gna.get_property("EXECUTION_DEVICES") == ["GNA"]
    with pytest.raises(DeviceError, match="no device"):
        core.compile_model(sigmoid_model(), "AUTO:-CPU,-ACC")
    with pytest.raises(DeviceError, match="NOPE"):
        core.compile_model(sigmoid_model(), "AUTO:NOPE")


def test_default_device_is_auto(core):
    compiled = core.compile_model(sigmoid_model())
    assert compiled._impl.device_name == "AUTO"
    np.testing.assert_allclose(compiled({"x": X})[0], expected(), rtol=1e-6)
    assert "AUTO" not in core.available_devices and "MULTI" not in core.available_devices


def test_capability_check_skips_devices_missing_ops_or_precision(core, fake_device):
    fake_device("NOSIG", ops={"Relu"})
    fake_device("INT8ONLY", precisions=["INT8"])
    compiled = core.compile_model(sigmoid_model(), "AUTO:NOSIG,INT8ONLY,CPU")
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    assert model_precision(sigmoid_model()) == "FP32"
    with pytest.raises(DeviceError, match="NOSIG does not support 1 node"):
        core.compile_model(sigmoid_model(), "AUTO:NOSIG,INT8ONLY")
    placed = core.query_model(sigmoid_model(), "AUTO:NOSIG,CPU")
    assert placed["x"] == "NOSIG" and set(placed.values()) == {"NOSIG", "CPU"}


def test_unknown_properties_are_passed_on_or_refused(core, fake_device):
    acc = fake_device("ACC")
    core.compile_model(sigmoid_model(), "AUTO:ACC", {"NUM_STREAMS": 1, "PERF_COUNT": True})
    assert acc.last_config["NUM_STREAMS"] == 1 and acc.last_config["PERF_COUNT"] is True
    assert acc.last_config["PERFORMANCE_HINT"].name == "LATENCY"
    with pytest.raises(PropertyError, match="GNA_DEVICE_MODE"):
        core.compile_model(sigmoid_model(), "AUTO:ACC", {"GNA_DEVICE_MODE": "GNA_SW_FP32"})


# --- start-up helper --------------------------------------------------------------------------
def test_cpu_serves_first_then_target_takes_over(core, fake_device, caplog):
    gate = threading.Event()
    slow = fake_device("SLOW", compile_gate=gate)
    caplog.set_level(logging.INFO, logger="vinerun")
    compiled = core.compile_model(sigmoid_model(), "AUTO:SLOW,CPU")
    assert compiled.get_property("EXECUTION_DEVICES") == ["(CPU)"]
    request = compiled.create_infer_request()
    for _ in range(2):
        np.testing.assert_allclose(request.infer({"x": X})[0], expected(), rtol=1e-6)
    assert execution_device(request) == "CPU" and outputs_from_helper(request)
    assert compiled.get_property("AUTO_OUTPUTS_FROM_HELPER") == 2
    assert slow.infer_count == 0
    assert any("CPU start-up helper" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)

    gate.set()
    assert compiled._impl.wait_for_target(30)
    assert compiled.get_property("EXECUTION_DEVICES") == ["SLOW"]
    request.start_async({"x": X})
    request.wait()
    np.testing.assert_allclose(request.get_output_tensor(0).data, expected(), rtol=1e-6)
    assert slow.infer_count == 1
    assert compiled.get_property("AUTO_OUTPUTS_FROM_HELPER") == 2
    assert compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE") == {"CPU": 2, "SLOW": 1}
    assert execution_device(request) == "SLOW" and not outputs_from_helper(request)
    with pytest.raises(DeviceError, match="not a request of an AUTO"):
        execution_device(core.compile_model(sigmoid_model(), "CPU").create_infer_request())


def test_startup_fallback_off_compiles_the_target_first(core, fake_device):
    fake_device("ACC")
    compiled = core.compile_model(sigmoid_model(), "AUTO:ACC,CPU", {"ENABLE_STARTUP_FALLBACK": "NO"})
    assert compiled.get_property("EXECUTION_DEVICES") == ["ACC"]
    assert compiled.get_property("AUTO_OUTPUTS_FROM_HELPER") == 0


def test_failed_target_compile_leaves_cpu_serving(core, fake_device):
    fake_device("BROKEN", compile_error=DeviceError("no such hardware"))
    compiled = core.compile_model(sigmoid_model(), "AUTO:BROKEN,CPU")
    assert compiled._impl.wait_for_target(30)
    assert compiled.get_property("EXECUTION_DEVICES") == ["CPU"]
    np.testing.assert_allclose(compiled({"x": X})[0], expected(), rtol=1e-6)
    assert compiled.get_property("AUTO_OUTPUTS_FROM_HELPER") == 0
    with pytest.raises(DeviceError, match="no such hardware"):
        core.compile_model(sigmoid_model(), "AUTO:BROKEN")


def test_cached_target_skips_the_helper(core, fake_device, tmp_path):
    fake_device("ACC")
    model = sigmoid_model()
    first = core.compile_model(model, "AUTO:ACC,CPU", {"CACHE_DIR": str(tmp_path)})
    assert first._impl.wait_for_target(30)
    assert list(tmp_path.glob("*.blob"))
    second = core.compile_model(model, "AUTO:ACC,CPU", {"CACHE_DIR": str(tmp_path)})
    assert second.get_property("EXECUTION_DEVICES") == ["ACC"]  # no "(CPU)": loaded from the cache


def test_stateful_model_runs_on_one_device_without_fallbacks(core, fake_device):
    gate = threading.Event()
    fake_device("SLOW", compile_gate=gate)
    gate.set()
    compiled = core.compile_model(accumulator(), "AUTO:SLOW,CPU")
    assert compiled.get_property("EXECUTION_DEVICES") == ["SLOW"]
    assert compiled._impl.fallback_devices("SLOW") == []
    request = compiled.create_infer_request()
    request.infer({"x": np.ones((2, 2), np.float32)})
    request.infer({"x": np.ones((2, 2), np.float32)})
    state = request.query_state()
    assert [s.name for s in state] == ["acc"]
    np.testing.assert_allclose(state[0].state.data, 2 * np.ones((2, 2)))


# --- runtime fallback -------------------------------------------------------------------------
def test_failed_inference_reruns_on_the_next_device(core, fake_device, caplog):
    flaky = fake_device("FLAKY", infer_failures=1)
    compiled = core.compile_model(sigmoid_model(), "AUTO:FLAKY,CPU", {"ENABLE_STARTUP_FALLBACK": False})
    request = compiled.create_infer_request()
    caplog.set_level(logging.WARNING, logger="vinerun")
    np.testing.assert_allclose(request.infer({"x": X})[0], expected(), rtol=1e-6)
    assert request._impl.last_device == "CPU"
    assert any("runtime fallback" in r.getMessage() for r in caplog.records)
    request.start_async({"x": X})
    request.wait()
    assert request._impl.last_device == "FLAKY" and flaky.infer_count == 1
    assert compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE") == {"CPU": 1, "FLAKY": 1}


def test_runtime_fallback_off_raises_the_device_error(core, fake_device):
    fake_device("FLAKY", infer_failures=-1)
    compiled = core.compile_model(sigmoid_model(), "AUTO:FLAKY,CPU",
                                  {"ENABLE_STARTUP_FALLBACK": False, "ENABLE_RUNTIME_FALLBACK": False})
    request = compiled.create_infer_request()
    with pytest.raises(InferenceError, match="injected"):
        request.infer({"x": X})
    request.start_async({"x": X})
    with pytest.raises(InferenceError, match="injected"):
        request.wait()


def test_failure_on_every_device_names_each(core, fake_device):
    fake_device("F1", infer_failures=-1)
    fake_device("F2", infer_failures=-1)
    compiled = core.compile_model(sigmoid_model(), "AUTO:F1,F2", {"ENABLE_STARTUP_FALLBACK": False})
    with pytest.raises(InferenceError, match="F1: .*F2: "):
        compiled({"x": X})


# --- the request API through AUTO -------------------------------------------------------------
def test_async_queue_tensors_profiling_and_export(core, fake_device):
    fake_device("ACC")
    compiled = core.compile_model(sigmoid_model(), "AUTO:ACC", {"PERF_COUNT": True})
    queue = ov.AsyncInferQueue(compiled, 3)
    results: dict[int, np.ndarray] = {}
    queue.set_callback(lambda request, i: results.update({i: request.get_output_tensor(0).data.copy()}))
    for i in range(9):
        queue.start_async({"x": X * i}, userdata=i)
    queue.wait_all()
    for i in range(9):
        np.testing.assert_allclose(results[i], 1 / (1 + np.exp(-X * i)), rtol=1e-6)
    request = compiled.create_infer_request()
    request.set_tensor("x", ov.Tensor(X))
    request.infer()
    np.testing.assert_allclose(request.get_tensor(compiled.output(0)).data, expected(), rtol=1e-6)
    assert {p.exec_type for p in request.get_profiling_info()} == {"ref_ACC"}
    with pytest.raises(NotSupportedError, match="cannot be exported"):
        compiled.export_model()
    assert compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 1
    assert compiled.get_property("PERFORMANCE_HINT").name == "LATENCY"


def test_model_priority_keeps_the_best_device_for_the_higher_priority_model(core, fake_device):
    fake_device("BEST")
    fake_device("NEXT")
    high = core.compile_model(sigmoid_model(), "AUTO:BEST,NEXT", {"MODEL_PRIORITY": "HIGH"})
    low = core.compile_model(sigmoid_model(), "AUTO:BEST,NEXT", {"MODEL_PRIORITY": "LOW"})
    assert high.get_property("EXECUTION_DEVICES") == ["BEST"]
    assert low.get_property("EXECUTION_DEVICES") == ["NEXT"]


def test_async_inference_falls_back_and_cancel_works(core, fake_device):
    fake_device("FLAKY", infer_failures=1)
    compiled = core.compile_model(sigmoid_model(), "AUTO:FLAKY,CPU", {"ENABLE_STARTUP_FALLBACK": False})
    request = compiled.create_infer_request()
    request.start_async({"x": X})
    request.wait()
    assert request._impl.last_device == "CPU"
    np.testing.assert_allclose(request.get_output_tensor(0).data, expected(), rtol=1e-6)

    gate = threading.Event()
    fake_device("HELD", infer_gate=gate)
    held = core.compile_model(sigmoid_model(), "AUTO:HELD").create_infer_request()
    held.start_async({"x": X})
    held.cancel()
    gate.set()
    with pytest.raises(RequestCancelledError):
        held.wait()
