"""Property keys, OpenVINO's ``openvino.properties``: ``str`` keys that make ``(key, value)`` pairs.

>>> import vinerun.properties as props
>>> props.cache_dir == "CACHE_DIR"
True
>>> key, value = props.hint.performance_mode(props.hint.PerformanceMode.THROUGHPUT)
>>> key, value.value
('PERFORMANCE_HINT', <PerformanceMode.THROUGHPUT: 2>)

A key called with a value checks its type and returns ``(name, OVAny(value))``, as in OpenVINO.
Read-only keys (``props.supported_properties``, ``props.range_for_streams``...) take no value.
"""

from __future__ import annotations

from vinerun.properties import device, hint, intel_auto, intel_cpu, intel_gna, intel_gpu, intel_npu, log, streams
from vinerun.properties._key import (
    BOOL,
    INT32,
    STR,
    TYPE,
    UINT32,
    UINT64,
    Property,
    PropertyEnum,
    enum_of,
    name_keys,
    ro,
    rw,
)


class CacheMode(PropertyEnum):
    OPTIMIZE_SIZE = 0
    OPTIMIZE_SPEED = 1


class WorkloadType(PropertyEnum):
    DEFAULT = 0
    EFFICIENT = 1


class CompatibilityCheck(PropertyEnum):
    NOT_APPLICABLE = 0
    SUPPORTED = 1
    UNSUPPORTED = 2


# read-write
enable_profiling = rw("PERF_COUNT", BOOL)
cache_dir = rw("CACHE_DIR", STR)
cache_mode = rw("CACHE_MODE", enum_of(CacheMode))
num_streams = rw("NUM_STREAMS", streams.NUM_ONLY)
inference_num_threads = rw("INFERENCE_NUM_THREADS", INT32)
compilation_num_threads = rw("COMPILATION_NUM_THREADS", INT32)
auto_batch_timeout = rw("AUTO_BATCH_TIMEOUT", UINT32)
enable_mmap = rw("ENABLE_MMAP", BOOL)
weights_path = rw("WEIGHTS_PATH", STR)
workload_type = rw("WORKLOAD_TYPE", enum_of(WorkloadType))
force_tbb_terminate = rw("FORCE_TBB_TERMINATE", BOOL)
key_cache_precision = rw("KEY_CACHE_PRECISION", TYPE)
value_cache_precision = rw("VALUE_CACHE_PRECISION", TYPE)
key_cache_group_size = rw("KEY_CACHE_GROUP_SIZE", UINT64)
value_cache_group_size = rw("VALUE_CACHE_GROUP_SIZE", UINT64)
enable_weightless = rw("ENABLE_WEIGHTLESS", BOOL)
# read-only
supported_properties = ro("SUPPORTED_PROPERTIES")
available_devices = ro("AVAILABLE_DEVICES")
optimal_number_of_infer_requests = ro("OPTIMAL_NUMBER_OF_INFER_REQUESTS")
optimal_batch_size = ro("OPTIMAL_BATCH_SIZE")
max_batch_size = ro("MAX_BATCH_SIZE")
range_for_streams = ro("RANGE_FOR_STREAMS")
range_for_async_infer_requests = ro("RANGE_FOR_ASYNC_INFER_REQUESTS")
execution_devices = ro("EXECUTION_DEVICES")
loaded_from_cache = ro("LOADED_FROM_CACHE")
model_name = ro("NETWORK_NAME")
compatibility_check = ro("COMPATIBILITY_CHECK")
runtime_requirements = ro("RUNTIME_REQUIREMENTS")

# Not in openvino.properties any more, but still a key users pass (AUTO/MULTI, benchmark_app).
exclusive_async_requests = rw("EXCLUSIVE_ASYNC_REQUESTS", BOOL)
cache_encryption_callbacks = rw("CACHE_ENCRYPTION_CALLBACKS")

name_keys(globals())

__all__ = [
    "CacheMode", "CompatibilityCheck", "Property", "PropertyEnum", "WorkloadType", "device", "hint",
    "intel_auto", "intel_cpu", "intel_gna", "intel_gpu", "intel_npu", "log", "streams",
] + [n for n, v in list(globals().items()) if isinstance(v, Property)]

