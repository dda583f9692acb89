"""Property keys, the typed property table, and property plumbing through Core and CompiledModel."""

import numpy as np
import pytest

import vinerun as ov
import vinerun.properties as props
from vinerun.errors import PropertyError, PropertyTypeError
from vinerun.plugin_api.property_kinds import Bool, EnumOf, Int, Precision, Streams
from vinerun.plugin_api.property_table import Prop, PropertyTable, PropertyValues
from vinerun.plugins.cpu import device_info
from vinerun.properties import hint


def _model():
    from vinerun import opset13 as ops

    x = ops.parameter([1, 3, 4, 4], ov.Type.f32, name="x")
    return ov.Model([ops.relu(x)], [x], "tiny")


# --- keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize("key, name", [
    (props.cache_dir, "CACHE_DIR"), (props.enable_profiling, "PERF_COUNT"), (props.model_name, "NETWORK_NAME"),
    (props.hint.performance_mode, "PERFORMANCE_HINT"), (props.hint.inference_precision, "INFERENCE_PRECISION_HINT"),
    (props.device.properties, "DEVICE_PROPERTIES"), (props.device.priorities, "MULTI_DEVICE_PRIORITIES"),
    (props.streams.num, "NUM_STREAMS"), (props.intel_auto.enable_runtime_fallback, "ENABLE_RUNTIME_FALLBACK"),
    (props.log.level, "LOG_LEVEL"), (props.device.capabilities, "OPTIMIZATION_CAPABILITIES"),
])
def test_keys_are_strings(key, name):
    assert isinstance(key, str) and key == name and {name: 1}[key] == 1 and key() == name


def test_key_call_makes_a_pair_and_read_only_keys_take_no_value():
    assert props.cache_dir("d") == ("CACHE_DIR", "d")
    assert props.hint.performance_mode(hint.PerformanceMode.THROUGHPUT) == ("PERFORMANCE_HINT", 2)
    assert props.device.properties({"CPU": {"NUM_STREAMS": 2}}) == ("DEVICE_PROPERTIES", {"CPU": {"NUM_STREAMS": 2}})
    with pytest.raises(TypeError, match="expected dictionary"):  # as OpenVINO: only {device: config} dicts
        props.device.properties("CPU", {"NUM_STREAMS": 2})
    with pytest.raises(TypeError, match="supported_properties.*incompatible function arguments"):
        props.supported_properties("x")
    assert props.range_for_streams.mutability == "RO" and props.num_streams.mutability == "RW"


def test_enum_values_match_openvino():
    assert [int(m) for m in hint.PerformanceMode] == [1, 2, 3]
    assert (hint.Priority.LOW, hint.Priority.MEDIUM, hint.Priority.HIGH, hint.Priority.DEFAULT) == (0, 1, 2, 1)
    assert (hint.ExecutionMode.PERFORMANCE, hint.ExecutionMode.ACCURACY) == (1, 2)
    assert (props.streams.Num.AUTO.to_integer(), props.streams.Num.NUMA.to_integer()) == (-1, -2)
    assert str(hint.PerformanceMode.THROUGHPUT) == "PerformanceMode.THROUGHPUT"
    assert props.log.Level.NO == -1 and props.intel_auto.SchedulePolicy.DEFAULT.name == "DEVICE_PRIORITY"


# --- kinds and the table ----------------------------------------------------------------------
def test_kinds_convert_and_refuse():
    perf = EnumOf(hint.PerformanceMode, aliases={"TPUT": "THROUGHPUT"})
    assert perf.convert("K", "throughput") is hint.PerformanceMode.THROUGHPUT
    assert perf.convert("K", "tput") is hint.PerformanceMode.THROUGHPUT
    assert perf.convert("K", 1) is hint.PerformanceMode.LATENCY
    with pytest.raises(PropertyError, match="K.*LATENCY, THROUGHPUT, CUMULATIVE_THROUGHPUT"):
        perf.convert("K", "FAST")
    assert Bool().convert("K", "YES") is True and Bool().convert("K", "no") is False
    with pytest.raises(PropertyTypeError, match="K"):
        Bool().convert("K", 1)
    assert Int(0).convert("K", "3") == 3
    with pytest.raises(PropertyTypeError):
        Int(0).convert("K", 1.5)
    with pytest.raises(PropertyError, match=">= 0"):
        Int(0).convert("K", -1)
    assert Streams().convert("K", "AUTO") == -1 and Streams().convert("K", props.streams.Num.NUMA) == -2
    assert Precision(["f32", "bf16"]).convert("K", "bf16") == ov.Type.bf16
    assert Precision(["f32", "bf16"]).convert("K", ov.Type.f32) == ov.Type.f32
    with pytest.raises(PropertyError, match="f32, bf16"):
        Precision(["f32", "bf16"]).convert("K", "i8")


def test_table_values_validate_everything_before_storing():
    table = PropertyTable("T plugin", [Prop("A", Int(0), 1), Prop("B", Bool(), False),
                                       Prop("R", default=lambda: (1, 2), mutability="RO")])
    values = PropertyValues(table)
    assert table.supported() == {"A": "RW", "B": "RW", "R": "RO", "SUPPORTED_PROPERTIES": "RO"}
    with pytest.raises(PropertyError):
        values.set({"A": 5, "B": "maybe"})
    assert values.get("A") == 1 and not values.is_set("A")  # nothing stored
    values.set({"A": "5"})
    assert values.get("A") == 5 and values.is_set("A") and values.get("R") == (1, 2)
    with pytest.raises(PropertyError, match="read-only"):
        values.set({"R": (1, 1)})
    with pytest.raises(PropertyError, match="Unsupported property C by T plugin.*Supported properties: A, B, R"):
        values.get("C")


# --- through the Core -------------------------------------------------------------------------
def test_typed_device_values():
    core = ov.Core()
    assert core.get_property("CPU", "PERFORMANCE_HINT") is hint.PerformanceMode.LATENCY
    assert core.get_property("CPU", props.enable_profiling) is False
    assert core.get_property("CPU", props.range_for_streams) == (1, device_info.core_count())
    assert core.get_property("CPU", props.device.type) is props.device.Type.INTEGRATED
    default = ov.Type.bf16 if device_info.has_native_bf16() else ov.Type.f32
    assert core.get_property("CPU", props.hint.inference_precision) == default
    supported = core.get_property("CPU", props.supported_properties)
    assert supported["PERFORMANCE_HINT"] == "RW" and supported["FULL_DEVICE_NAME"] == "RO"


@pytest.mark.parametrize("how", ["dict", "pair", "key_dict", "list_of_pairs"])
def test_set_property_forms(how):
    core = ov.Core()
    mode = hint.PerformanceMode.THROUGHPUT
    arg = {"dict": {"PERFORMANCE_HINT": "THROUGHPUT"}, "pair": props.hint.performance_mode(mode),
           "key_dict": {props.hint.performance_mode: mode},
           "list_of_pairs": [props.hint.performance_mode(mode), props.enable_profiling(True)]}[how]
    core.set_property("CPU", arg)
    assert core.get_property("CPU", props.hint.performance_mode) is mode


def test_property_errors_name_key_and_allowed_values():
    core = ov.Core()
    with pytest.raises(PropertyError, match="Unsupported property NOT_A_KEY by CPU plugin.*PERFORMANCE_HINT"):
        core.set_property("CPU", {"NOT_A_KEY": 1})
    with pytest.raises(PropertyError, match="PERFORMANCE_HINT.*LATENCY, THROUGHPUT, CUMULATIVE_THROUGHPUT"):
        core.set_property("CPU", {"PERFORMANCE_HINT": "FASTEST"})
    with pytest.raises(PropertyTypeError, match="NUM_STREAMS"):
        core.compile_model(_model(), "CPU", {"NUM_STREAMS": 1.5})
    with pytest.raises(PropertyError, match="read-only"):
        core.set_property("CPU", {"FULL_DEVICE_NAME": "x"})
    with pytest.raises(PropertyError, match="NOPE"):
        core.set_property({"NOPE": 1})
    with pytest.raises(PropertyError, match="Unsupported property NOPE"):
        core.get_property("CPU", "NOPE")


def test_global_set_property_reaches_devices():
    core = ov.Core()
    core.set_property({props.enable_profiling: True})
    assert core.get_property("CPU", "PERF_COUNT") is True


def test_device_properties_in_compile_and_set_property():
    core = ov.Core()
    compiled = core.compile_model(_model(), "CPU", {
        props.device.properties: {"CPU": {props.hint.performance_mode: hint.PerformanceMode.THROUGHPUT}}})
    assert compiled.get_property("PERFORMANCE_HINT") is hint.PerformanceMode.THROUGHPUT
    compiled = core.compile_model(_model(), "CPU", dict([props.device.properties({"CPU": {"NUM_STREAMS": 1}})]))
    assert compiled.get_property("NUM_STREAMS") == 1
    core.set_property({props.device.properties: {"CPU": {"PERF_COUNT": "YES"}}})
    assert core.get_property("CPU", "PERF_COUNT") is True


def test_compiled_model_properties_are_typed_and_read_only():
    core = ov.Core()
    compiled = core.compile_model(_model(), "CPU", {"PERF_COUNT": "YES", "PERFORMANCE_HINT": "LATENCY"})
    assert compiled.get_property(props.model_name) == "tiny"
    assert compiled.get_property("PERF_COUNT") is True
    assert compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS") == 1
    assert compiled.get_property(props.execution_devices) == ["CPU"]
    assert set(compiled.get_property("SUPPORTED_PROPERTIES").values()) == {"RO"}
    with pytest.raises(PropertyError):
        compiled.set_property({"PERF_COUNT": False})
    out = compiled(np.ones((1, 3, 4, 4), np.float32))
    assert out[0].shape == (1, 3, 4, 4)


def test_precision_hints():
    core = ov.Core()
    accurate = core.compile_model(_model(), "CPU", {"EXECUTION_MODE_HINT": "ACCURACY"})
    assert accurate.get_property("EXECUTION_MODE_HINT") is hint.ExecutionMode.ACCURACY
    assert accurate.get_property("INFERENCE_PRECISION_HINT") == ov.Type.dynamic  # the model's own, as OpenVINO
    explicit = core.compile_model(_model(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert explicit.get_property("INFERENCE_PRECISION_HINT") == ov.Type.f32
    bf16 = core.compile_model(_model(), "CPU", {"INFERENCE_PRECISION_HINT": ov.Type.bf16})
    expected = ov.Type.bf16 if device_info.has_native_bf16() else ov.Type.f32
    assert bf16.get_property("INFERENCE_PRECISION_HINT") == expected


def test_devices_tool_prints_typed_values(capsys):
    from vinerun.tools.devices import format_value, query_devices

    values = query_devices(ov.Core())["CPU"]
    assert values["PERFORMANCE_HINT"] is hint.PerformanceMode.LATENCY
    assert format_value(hint.PerformanceMode.LATENCY) == "LATENCY"
    assert format_value(ov.Type.f32) == "f32" and format_value(False) == "NO" and format_value((1, 2)) == "1 2"
