"""Property keys as OpenVINO's Python API has them: typed ``key(value)`` pairs holding an ``OVAny``, enums with
``__entries``, every module and key string code written for OpenVINO uses."""

import pickle

import numpy as np
import pytest

import vinerun as ov
import vinerun.properties as props
from vinerun.properties import device, hint, intel_auto, intel_cpu, intel_gpu, intel_npu, log, streams
from vinerun.properties.intel_gpu import hint as gpu_hint


def test_a_key_is_its_name_and_a_call_with_a_value_is_a_name_ovany_pair():
    assert props.enable_profiling == "PERF_COUNT" and props.enable_profiling() == "PERF_COUNT"
    key, value = props.enable_profiling(True)
    assert key == "PERF_COUNT" and isinstance(value, ov.OVAny) and value.value is True
    assert props.cache_dir("d") == ("CACHE_DIR", ov.OVAny("d"))
    assert dict([props.cache_dir("d"), streams.num(3)]) == {"CACHE_DIR": ov.OVAny("d"), "NUM_STREAMS": ov.OVAny(3)}


@pytest.mark.parametrize("key, given, stored", [
    (props.enable_profiling, 1, True), (props.enable_profiling, 0, False), (props.enable_profiling, np.bool_(1), True),
    (props.auto_batch_timeout, np.uint32(37), 37), (props.inference_num_threads, -8, -8),
    (intel_cpu.sparse_weights_decompression_rate, 0.1, float(np.float32(0.1))),
    (hint.activations_scale_factor, 2, 2.0), (props.cache_dir, b"dir", "dir"),
    (hint.model_distribution_policy, {hint.ModelDistributionPolicy.TENSOR_PARALLEL},
     {hint.ModelDistributionPolicy.TENSOR_PARALLEL}),
    (streams.num, streams.Num.NUMA, -2), (streams.num, 42, 42),
    (gpu_hint.queue_throttle, gpu_hint.ThrottleLevel.LOW, hint.Priority.LOW),
])
def test_values_convert_as_openvino_converts_them(key, given, stored):
    value = key(given)[1].value
    assert value == stored and type(value) is type(stored)


@pytest.mark.parametrize("key, wrong", [
    (props.cache_dir, 6), (props.enable_profiling, "YES"), (props.inference_num_threads, 8.5),
    (props.auto_batch_timeout, -1), (props.auto_batch_timeout, "1"), (hint.performance_mode, 1),
    (hint.performance_mode, "LATENCY"), (hint.inference_precision, "f32"), (hint.model_distribution_policy, []),
    (hint.activations_scale_factor, "1"), (props.supported_properties, "x"), (intel_npu.max_tiles, 128),
    (props.num_streams, 3),
])
def test_a_value_of_the_wrong_type_is_a_type_error_naming_the_function(key, wrong):
    with pytest.raises(TypeError, match=rf"^{key.fname}\(\): incompatible function arguments"):
        key(wrong)


def test_typed_values_of_vinerun_classes():
    assert hint.inference_precision(ov.Type.f32)[1].value == ov.Type.f32
    blob = hint.compiled_blob(ov.Tensor(ov.Type.u8, [2, 5]))[1].value
    assert blob.element_type == ov.Type.u8 and list(blob.shape) == [2, 5]
    with pytest.raises(TypeError):
        hint.compiled_blob(np.zeros(3, np.uint8))


def test_device_priorities_and_device_properties():
    assert device.priorities("CPU", "GPU") == ("MULTI_DEVICE_PRIORITIES", ov.OVAny("CPU,GPU,"))
    with pytest.raises(TypeError, match="Incorrect passed value: 6 , expected string values."):
        device.priorities("CPU", 6)
    pair = device.properties({"CPU": dict([streams.num(2), hint.inference_precision(ov.Type.f32)])})
    assert pair[1].value == {"CPU": {"NUM_STREAMS": 2, "INFERENCE_PRECISION_HINT": ov.Type.f32}}
    assert all(type(k) is str for k in pair[1].value["CPU"])  # OVAny values and key objects are unwrapped
    with pytest.raises(TypeError, match="expected dictionary"):
        device.properties("CPU", {"NUM_STREAMS": 2})


def test_enums_have_openvino_entries_names_and_strings():
    entries = hint.Priority.__entries
    assert list(entries) == ["LOW", "MEDIUM", "HIGH", "DEFAULT"]
    assert entries["DEFAULT"][0] is hint.Priority.MEDIUM and entries["LOW"] == (hint.Priority.LOW, None)
    assert str(hint.Priority.DEFAULT) == "Priority.MEDIUM" and repr(log.Level.NO) == "<Level.NO: -1>"
    assert (hint.PerformanceMode.LATENCY.name, hint.PerformanceMode.LATENCY.value) == ("LATENCY", 1)
    assert int(intel_auto.SchedulePolicy.DEFAULT) == 1 and str(device.Type.DISCRETE) == "Type.DISCRETE"
    assert f"{props.CacheMode.OPTIMIZE_SPEED}" == "CacheMode.OPTIMIZE_SPEED"
    assert str(gpu_hint.ThrottleLevel.HIGH) == "Priority.HIGH"


def test_streams_num_defaults_to_auto():
    assert streams.Num().to_integer() == -1 and streams.Num(2).to_integer() == 2
    assert streams.Num.NUMA.to_integer() == -2


@pytest.mark.parametrize("key, name", [
    (intel_gpu.device_total_mem_size, "GPU_DEVICE_TOTAL_MEM_SIZE"), (gpu_hint.queue_priority, "GPU_QUEUE_PRIORITY"),
    (gpu_hint.available_device_mem, "AVAILABLE_DEVICE_MEM_SIZE"), (intel_npu.turbo, "NPU_TURBO"),
    (intel_npu.compiler_version, "NPU_COMPILER_VERSION"), (props.loaded_from_cache, "LOADED_FROM_CACHE"),
    (device.luid, "DEVICE_LUID"), (hint.model, "MODEL_PTR"), (props.key_cache_group_size, "KEY_CACHE_GROUP_SIZE"),
])
def test_openvino_key_strings(key, name):
    assert key == name and key() == name


def test_keys_pickle_as_plain_keys():
    copy = pickle.loads(pickle.dumps(props.cache_dir))
    assert copy == "CACHE_DIR" and copy.mutability == "RW" and copy("d")[1].value == "d"
    assert pickle.loads(pickle.dumps(hint.Priority.HIGH)) is hint.Priority.HIGH


def test_pairs_configure_devices():
    core = ov.Core()
    core.set_property("CPU", props.enable_profiling(True))
    assert core.get_property("CPU", props.enable_profiling) is True
    core.set_property("CPU", dict([streams.num(streams.Num.AUTO), hint.performance_mode(hint.PerformanceMode.LATENCY)]))
    assert isinstance(core.get_property("CPU", streams.num), int)
    assert core.get_property("CPU", hint.performance_mode) == hint.PerformanceMode.LATENCY
