"""The GNA device through the Core: properties (original names, defaults, errors), GNA_SW_FP32 runs
like the CPU device, compile-time limits, estimated counters, export/import."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import DeviceError, NotSupportedError, PropertyError
from vinerun.ir.types import Type
from vinerun.plugins.gna.cost_model import STALL_COUNTER, TOTAL_COUNTER
from vinerun.plugins.gna.limits import GNALimitError
from vinerun.properties import hint
from vinerun.properties.intel_gna import ExecutionMode, HWGeneration, PWLDesignAlgorithm
from vinerun.tools.devices import query_devices

FP32 = {"GNA_DEVICE_MODE": "GNA_SW_FP32"}


def speech_model() -> ov.Model:
    """A Kaldi-style frame model: affine + sigmoid, affine + recurrent state + tanh, affine out."""
    rng = np.random.default_rng(7)

    def w(*shape: int) -> ov.Node:
        return ops.constant((rng.standard_normal(shape) * 0.3).astype(np.float32))

    x = ops.parameter([1, 16], name="feats")
    a = ops.sigmoid(ops.add(ops.matmul(x, w(16, 32), False, False), w(1, 32)), name="a")
    prev = ops.read_value(ops.constant(np.zeros((1, 32), np.float32)), "h", name="h_read")
    z = ops.tanh(ops.add(ops.matmul(a, w(32, 32), False, False), ops.matmul(prev, w(32, 32), False, False)),
                 name="z")
    out = ops.add(ops.matmul(z, w(32, 8), False, False), w(1, 8), name="scores")
    return ov.Model([out], [ops.assign(z, prev.get_variable(), name="h_write")], [x], "speech")


def fc_model(batch: int = 1) -> ov.Model:
    x = ops.parameter([batch, 16], name="x")
    y = ops.sigmoid(ops.add(ops.matmul(x, ops.constant(np.full((16, 8), 0.1, np.float32)), False, False),
                            ops.constant(np.zeros((1, 8), np.float32))), name="y")
    return ov.Model([y], [x], "fc")


# --- availability and defaults -------------------------------------------------------------------

def test_gna_is_always_available() -> None:
    core = ov.Core()
    assert "GNA" in core.available_devices
    assert core.get_property("GNA", "AVAILABLE_DEVICES") == ["GNA_SW"]
    listed = query_devices(core)["GNA"]
    assert listed["GNA_DEVICE_MODE"] == ExecutionMode.SW_EXACT
    assert "GNA_SCALE_FACTOR_0" not in listed  # legacy keys are accepted, not listed


def test_defaults() -> None:
    core = ov.Core()
    get = lambda k: core.get_property("GNA", k)  # noqa: E731
    assert get("GNA_DEVICE_MODE") == ExecutionMode.SW_EXACT
    assert get("GNA_HW_EXECUTION_TARGET") == HWGeneration.GNA_3_5
    assert get("GNA_HW_COMPILE_TARGET") == HWGeneration.GNA_3_5
    assert get("INFERENCE_PRECISION_HINT") == Type.i16
    assert get("GNA_SCALE_FACTOR_PER_INPUT") == {}
    assert get("GNA_PWL_DESIGN_ALGORITHM") == PWLDesignAlgorithm.RECURSIVE_DESCENT
    assert get("GNA_PWL_MAX_ERROR_PERCENT") == 1.0
    assert get("PERFORMANCE_HINT_NUM_REQUESTS") == 1
    assert get("GNA_COMPACT_MODE") is True
    assert get("PERF_COUNT") is False
    assert get("CACHE_DIR") == ""
    assert get("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 1
    assert get("RANGE_FOR_ASYNC_INFER_REQUESTS") == (1, 1, 1)
    assert get("OPTIMIZATION_CAPABILITIES") == ["INT16", "INT8", "EXPORT_IMPORT", "FP32"]
    assert get("FULL_DEVICE_NAME") == "GNA_SW"
    assert get("EXECUTION_DEVICES") == ["GNA_SW_EXACT"]
    assert get("GNA_SCALE_FACTOR_3") == 1.0


# --- set / get -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    ("GNA_SW_FP32", ExecutionMode.SW_FP32), ("GNA_AUTO", ExecutionMode.AUTO), ("GNA_HW", ExecutionMode.HW),
    ("GNA_HW_WITH_SW_FBACK", ExecutionMode.HW_WITH_SW_FBACK), ("GNA_SW_EXACT", ExecutionMode.SW_EXACT),
    ("GNA_SW", ExecutionMode.AUTO), (ExecutionMode.SW_FP32, ExecutionMode.SW_FP32), (4, ExecutionMode.SW_FP32),
])
def test_execution_mode_values(value: object, expected: ExecutionMode) -> None:
    core = ov.Core()
    core.set_property("GNA", {"GNA_DEVICE_MODE": value})
    assert core.get_property("GNA", "GNA_DEVICE_MODE") == expected
    devices = ["GNA_SW_FP32"] if expected == ExecutionMode.SW_FP32 else ["GNA_SW_EXACT"]
    assert core.get_property("GNA", "EXECUTION_DEVICES") == devices


def test_targets_exec_sets_compile_only_while_unset() -> None:
    core = ov.Core()
    core.set_property("GNA", {"GNA_HW_EXECUTION_TARGET": "GNA_TARGET_3_0"})
    assert core.get_property("GNA", "GNA_HW_COMPILE_TARGET") == HWGeneration.GNA_3_0
    core.set_property("GNA", {"GNA_EXEC_TARGET": "GNA_TARGET_3_5"})  # compile already set: kept
    assert core.get_property("GNA", "GNA_HW_EXECUTION_TARGET") == HWGeneration.GNA_3_5
    assert core.get_property("GNA", "GNA_HW_COMPILE_TARGET") == HWGeneration.GNA_3_0
    core.set_property("GNA", {"GNA_COMPILE_TARGET": "", "GNA_HW_EXECUTION_TARGET": "GNA_2_0"})
    assert core.get_property("GNA", "GNA_HW_COMPILE_TARGET") == HWGeneration.GNA_2_0


def test_other_values_and_legacy_keys() -> None:
    core = ov.Core()
    core.set_property("GNA", {"GNA_PRECISION": "I8", "GNA_SCALE_FACTOR_PER_INPUT": {"x": 2048},
                              "GNA_SCALE_FACTOR_1": "8", "GNA_PWL_UNIFORM_DESIGN": "YES",
                              "GNA_PWL_MAX_ERROR_PERCENT": 0.5, "PERFORMANCE_HINT_NUM_REQUESTS": 0,
                              "PERF_COUNT": "YES", "CACHE_DIR": "/tmp/gna-cache-unused"})
    get = lambda k: core.get_property("GNA", k)  # noqa: E731
    assert get("INFERENCE_PRECISION_HINT") == Type.i8 == get("GNA_PRECISION")
    assert get("GNA_SCALE_FACTOR_PER_INPUT") == {"x": 2048.0}
    assert get("GNA_SCALE_FACTOR_1") == 8.0
    assert get("GNA_PWL_DESIGN_ALGORITHM") == PWLDesignAlgorithm.UNIFORM_DISTRIBUTION
    assert get("GNA_PWL_MAX_ERROR_PERCENT") == 0.5
    assert get("PERFORMANCE_HINT_NUM_REQUESTS") == 1  # 0 -> 1
    core.set_property("GNA", {"PERFORMANCE_HINT_NUM_REQUESTS": 500})
    assert get("PERFORMANCE_HINT_NUM_REQUESTS") == 127  # > 127 -> 127
    assert get("PERF_COUNT") is True
    core.set_property("GNA", {"CACHE_DIR": ""})


@pytest.mark.parametrize(("config", "message"), [
    ({"GNA_DEVICE_MODE": "GNA_SW_AVX2"}, "GNA device mode unsupported: GNA_SW_AVX2"),
    ({"GNA_DEVICE_MODE": 7}, "GNA device mode unsupported: 7"),
    ({"INFERENCE_PRECISION_HINT": "f32"}, "Unsupported precision of GNA hardware, should be i16 or i8, but was: f32"),
    ({"GNA_PRECISION": "I32"}, "Unsupported precision of GNA hardware, should be i16 or i8, but was: I32"),
    ({"GNA_SCALE_FACTOR_PER_INPUT": {"x": 0.0}}, "input scale factor of 0.0f or +-inf not supported"),
    ({"GNA_SCALE_FACTOR_0": float("inf")}, "input scale factor of 0.0f or +-inf not supported"),
    ({"GNA_SCALE_FACTOR": 0}, "input scale factor of 0.0f or +-inf not supported"),
    ({"GNA_PWL_MAX_ERROR_PERCENT": 129}, "Invalid value of PWL max error percent: 129"),
    ({"GNA_PWL_MAX_ERROR_PERCENT": -1}, "Invalid value of PWL max error percent: -1"),
    ({"GNA_HW_EXECUTION_TARGET": "GNA_TARGET_1_0"}, "Unsupported GNA target"),
    ({"GNA_HW_COMPILE_TARGET": HWGeneration.GNA_4_0}, "Unsupported GNA target"),
    ({"GNA_LIB_N_THREADS": 128}, "Unsupported accelerator lib number of threads: 128"),
    ({"GNA_DEVICE_MODE": "GNA_SW_FP32", "PERFORMANCE_HINT_NUM_REQUESTS": 2},
     "GNA plugin does not support async mode on GNA_SW_FP32!"),
    ({"NUM_STREAMS": 2}, "Incorrect GNA Plugin config. Key NUM_STREAMS not supported"),
    ({"GNA_SCALE_FACTOR_100": 2}, "Incorrect GNA Plugin config. Key GNA_SCALE_FACTOR_100 not supported"),
    ({"AVAILABLE_DEVICES": ["X"]}, "read-only"),
])
def test_bad_values_are_rejected_with_the_original_messages(config: dict, message: str) -> None:
    core = ov.Core()
    with pytest.raises(PropertyError) as info:
        core.set_property("GNA", config)
    assert message in str(info.value)
    assert core.get_property("GNA", "GNA_DEVICE_MODE") == ExecutionMode.SW_EXACT  # nothing was set


def test_unknown_key_on_get() -> None:
    with pytest.raises(PropertyError, match="Incorrect GNA Plugin config. Key FOO not supported"):
        ov.Core().get_property("GNA", "FOO")


# --- compiled model ------------------------------------------------------------------------------

def test_compiled_model_properties_are_read_only_but_the_mode() -> None:
    compiled = ov.Core().compile_model(fc_model(), "GNA", {**FP32, "GNA_HW_EXECUTION_TARGET": "GNA_TARGET_3_0"})
    assert compiled.get_property("GNA_HW_COMPILE_TARGET") == HWGeneration.GNA_3_0
    assert compiled.get_property("EXECUTION_DEVICES") == ["GNA_SW_FP32"]
    assert compiled.get_property("NETWORK_NAME") == "fc"
    assert compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 1
    supported = compiled.get_property("SUPPORTED_PROPERTIES")
    assert {k for k, m in supported.items() if m == "RW"} == {"GNA_DEVICE_MODE", "PERFORMANCE_HINT", "LOG_LEVEL"}
    for key, value in [("INFERENCE_PRECISION_HINT", "i8"), ("GNA_HW_COMPILE_TARGET", "GNA_TARGET_2_0"),
                       ("GNA_PWL_MAX_ERROR_PERCENT", 2.0), ("PERF_COUNT", True)]:
        with pytest.raises(PropertyError, match="read-only"):
            compiled.set_property({key: value})
    compiled.set_property({"PERFORMANCE_HINT": "THROUGHPUT", "LOG_LEVEL": "LOG_DEBUG"})
    assert compiled.get_property("PERFORMANCE_HINT") == hint.PerformanceMode.THROUGHPUT


def test_execution_mode_changes_after_compile() -> None:
    config = {**FP32, "GNA_SCALE_FACTOR_PER_INPUT": {"x": 2048.0}}  # 16384 would saturate the int32 sums
    compiled = ov.Core().compile_model(fc_model(), "GNA", config)
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
    before = compiled(x)[0]
    compiled.set_property({"GNA_DEVICE_MODE": "GNA_HW"})  # no hardware: the bit-exact software path
    assert compiled.get_property("GNA_DEVICE_MODE") == ExecutionMode.HW
    assert compiled.get_property("EXECUTION_DEVICES") == ["GNA_SW_EXACT"]
    exact = compiled(x)[0]
    assert not np.array_equal(exact, before)
    np.testing.assert_allclose(exact, before, atol=0.012)  # PWL sigmoid within 1 % (+ rounding)
    compiled.set_property({"GNA_DEVICE_MODE": "GNA_SW_FP32"})
    np.testing.assert_array_equal(compiled(x)[0], before)


def test_exact_affine_is_bit_exact_by_hand() -> None:
    # W = 0.5 I: s_w = 16384/0.5 = 32768, w_q = 16384; s_in = 100, so s_out = 3276800 and y = q_in / 200
    x = ops.parameter([1, 8], name="x")
    model = ov.Model([ops.matmul(x, ops.constant(np.eye(8, dtype=np.float32) * 0.5), False, False)], [x], "diag")
    compiled = ov.Core().compile_model(model, "GNA", {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 100}})
    data = np.array([[0.125, -0.125, 0.3, -0.004, 0.006, 400.0, -400.0, 0.0]], np.float32)
    q_in = np.array([13, -13, 30, 0, 1, 32767, -32768, 0])  # half away from zero, int16 saturation
    np.testing.assert_array_equal(compiled(data)[0], (q_in / 200).astype(np.float32).reshape(1, 8))


def test_exact_legacy_scale_factor_by_index_and_default() -> None:
    x = ops.parameter([1, 8], name="x")
    model = ov.Model([ops.matmul(x, ops.constant(np.eye(8, dtype=np.float32)), False, False)], [x], "eye")
    data = np.full((1, 8), 0.3, np.float32)
    core = ov.Core()
    np.testing.assert_array_equal(core.compile_model(model, "GNA")(data)[0], 0)  # s = 1.0: 0.3 rounds to 0
    out = core.compile_model(model, "GNA", {"GNA_SCALE_FACTOR_0": 10})(data)[0]
    np.testing.assert_array_equal(out, np.float32(0.3))


@pytest.mark.parametrize("precision", ["i16", "i8"])
def test_exact_pwl_error_follows_pwl_max_error_percent(precision: str) -> None:
    x = ops.parameter([1, 16], name="x")
    w = ops.constant(np.linspace(-4, 4, 16 * 64, dtype=np.float32).reshape(16, 64))
    model = ov.Model([ops.tanh(ops.matmul(x, w, False, False))], [x], "tanh")
    data = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16) * 0.1
    core = ov.Core()
    ref = core.compile_model(model, "GNA", FP32)(data)[0]
    errors = {}
    for percent in (0.5, 5.0):
        config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 16384 / 0.1}, "GNA_PWL_MAX_ERROR_PERCENT": percent,
                  "INFERENCE_PRECISION_HINT": precision}
        errors[percent] = np.abs(core.compile_model(model, "GNA", config)(data)[0] - ref).max()
    assert errors[0.5] <= 0.5 / 100 * 2 + 2e-3  # tanh's range is 2
    assert errors[0.5] < errors[5.0] <= 5.0 / 100 * 2 + 2e-3


def test_exact_path_names_what_it_does_not_cover() -> None:
    x = ops.parameter([1, 16], name="x")
    model = ov.Model([ops.exp(ops.matmul(x, ops.constant(np.eye(16, dtype=np.float32)), False, False))], [x], "exp")
    with pytest.raises(NotSupportedError, match=r"GNA_SW_EXACT does not cover this model yet: .*type Exp"):
        ov.Core().compile_model(model, "GNA")


def test_state_forces_one_request() -> None:
    compiled = ov.Core().compile_model(speech_model(), "GNA", {"GNA_DEVICE_MODE": "GNA_SW_FP32"})
    assert compiled.get_property("PERFORMANCE_HINT_NUM_REQUESTS") == 1


# --- execution -----------------------------------------------------------------------------------

def test_fp32_mode_matches_the_cpu_device_frame_by_frame() -> None:
    core = ov.Core()
    model = speech_model()
    gna = core.compile_model(model, "GNA", FP32).create_infer_request()
    cpu = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
    frames = np.random.default_rng(3).standard_normal((12, 1, 16)).astype(np.float32)
    for frame in frames:  # float32 sums in another order (the CPU fuses MatMul + Add): atol 1e-5
        np.testing.assert_allclose(gna.infer([frame])[0], cpu.infer([frame])[0], rtol=1e-5, atol=1e-5)
    (g_state,), (c_state,) = gna.query_state(), cpu.query_state()
    assert g_state.name == "h"
    np.testing.assert_allclose(g_state.state.data, c_state.state.data, rtol=1e-5, atol=1e-5)
    assert np.abs(g_state.state.data).max() > 0
    gna.reset_state()
    cpu.reset_state()
    np.testing.assert_allclose(gna.infer([frames[0]])[0], cpu.infer([frames[0]])[0], rtol=1e-5, atol=1e-6)


def test_async_request_runs() -> None:
    compiled = ov.Core().compile_model(fc_model(), "GNA", FP32)
    request = compiled.create_infer_request()
    x = np.ones((1, 16), np.float32)
    request.start_async([x])
    request.wait()
    np.testing.assert_allclose(request.get_output_tensor(0).data, 1 / (1 + np.exp(-1.6)), rtol=1e-6)


@pytest.mark.parametrize(("target", "cycles"), [("GNA_TARGET_3_5", 4), ("GNA_TARGET_3_0", 4), ("GNA_TARGET_2_0", 6)])
def test_estimated_counters(target: str, cycles: int) -> None:
    # FC 16->8: 128 MACs; bias add: 8 (diagonal); sigmoid: 8 PWL outputs.
    # 3.x: ceil(128/64) + ceil(8/64) + ceil(8/16) = 4; 2.0: ceil(128/48) + ceil(8/48) + ceil(8/6) = 6
    compiled = ov.Core().compile_model(fc_model(), "GNA", {**FP32, "PERF_COUNT": True,
                                                          "GNA_HW_EXECUTION_TARGET": target})
    request = compiled.create_infer_request()
    request.infer([np.ones((1, 16), np.float32)])
    total, stall = request.get_profiling_info()
    assert (total.node_name, stall.node_name) == (TOTAL_COUNTER, STALL_COUNTER)
    assert "estimate" in total.node_name and "estimate" in total.exec_type
    assert total.real_time.microseconds == cycles
    assert stall.real_time.microseconds == 0


def test_no_counters_without_perf_count() -> None:
    request = ov.Core().compile_model(fc_model(), "GNA", FP32).create_infer_request()
    request.infer([np.ones((1, 16), np.float32)])
    assert request.get_profiling_info() == []


# --- limits through compile_model -----------------------------------------------------------------

def test_limits_fail_at_compile_time() -> None:
    core = ov.Core()
    core.compile_model(fc_model(8), "GNA", FP32)
    with pytest.raises(GNALimitError, match=r"layer: MatMul_\d+, type: MatMul, and batch size\(9\) not supported "
                                            r"\(compile target GNA_TARGET_3_5"):
        core.compile_model(fc_model(9), "GNA", FP32)
    x = ops.parameter([1, 8, 16, 16], name="x")
    conv = ops.convolution(x, ops.constant(np.ones((8, 8, 3, 3), np.float32)), [1, 1], [0, 0], [0, 0], [1, 1],
                           name="conv")
    model = ov.Model([conv], [x], "conv2d")
    core.compile_model(model, "GNA", {**FP32, "GNA_HW_COMPILE_TARGET": "GNA_TARGET_3_0"})
    with pytest.raises(GNALimitError, match=r"layer conv \(type Convolution2D\)!.*GNA_TARGET_2_0"):
        core.compile_model(model, "GNA", {**FP32, "GNA_HW_COMPILE_TARGET": "GNA_TARGET_2_0"})


def test_newer_compile_target_than_execution_target_is_refused() -> None:
    with pytest.raises(DeviceError, match="compiled for GNA_TARGET_3_5 is not supported on GNA_TARGET_2_0"):
        ov.Core().compile_model(fc_model(), "GNA", {**FP32, "GNA_HW_EXECUTION_TARGET": "GNA_TARGET_2_0",
                                                    "GNA_HW_COMPILE_TARGET": "GNA_TARGET_3_5"})
    ov.Core().compile_model(fc_model(), "GNA", {**FP32, "GNA_HW_EXECUTION_TARGET": "GNA_TARGET_3_5",
                                                "GNA_HW_COMPILE_TARGET": "GNA_TARGET_2_0"})


def test_export_import_keeps_config_and_outputs() -> None:
    core = ov.Core()
    compiled = core.compile_model(speech_model(), "GNA", {**FP32, "GNA_HW_COMPILE_TARGET": "GNA_TARGET_3_0"})
    blob = compiled.export_model()
    imported = core.import_model(blob, "GNA")
    assert imported.get_property("GNA_HW_COMPILE_TARGET") == HWGeneration.GNA_3_0
    assert imported.get_property("GNA_DEVICE_MODE") == ExecutionMode.SW_FP32
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    a, b = compiled.create_infer_request(), imported.create_infer_request()
    for _ in range(3):
        np.testing.assert_array_equal(a.infer([x])[0], b.infer([x])[0])


def test_cache_dir_stores_and_loads_a_blob(tmp_path: object) -> None:
    core = ov.Core()
    config = {**FP32, "CACHE_DIR": str(tmp_path), "GNA_HW_COMPILE_TARGET": "GNA_TARGET_3_0"}
    first = core.compile_model(speech_model(), "GNA", config)
    second = core.compile_model(speech_model(), "GNA", config)
    assert (first.get_property("LOADED_FROM_CACHE"), second.get_property("LOADED_FROM_CACHE")) == (False, True)
    assert second.get_property("GNA_HW_COMPILE_TARGET") == HWGeneration.GNA_3_0
    x = np.ones((1, 16), np.float32)
    np.testing.assert_array_equal(first(x)[0], second(x)[0])


def test_pwl_segments_outside_the_int32_input_are_dropped() -> None:
    from vinerun.plugins.gna.exact import fit_input_range
    from vinerun.plugins.gna.pwl_functions import NEG_INF, Segment

    segs = [Segment(NEG_INF, 0.0, 0.0), Segment(-10.0, 0.1, 1.0), Segment(-1.0, 1.0, 1.9), Segment(0.5, 0.0, 2.4),
            Segment(10.0, 0.0, 3.0)]
    # s_in = 1e9: int32 covers about [-2.147, 2.147]; -10 is below it, 10 above
    assert fit_input_range(segs, 1e9) == [Segment(NEG_INF, 0.1, 1.0), segs[2], segs[3]]
    assert fit_input_range(segs, 1.0) == segs
