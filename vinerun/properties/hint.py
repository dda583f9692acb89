"""``properties.hint``: what the user wants (latency or throughput, precision, priority)."""

from __future__ import annotations

from vinerun.properties._key import (
    BOOL,
    FLOAT32,
    MODEL,
    TENSOR,
    TYPE,
    UINT32,
    UINT64,
    PropertyEnum,
    enum_of,
    name_keys,
    rw,
    set_of,
)


class PerformanceMode(PropertyEnum):
    """``PERFORMANCE_HINT`` values."""

    LATENCY = 1
    THROUGHPUT = 2
    CUMULATIVE_THROUGHPUT = 3


class Priority(PropertyEnum):
    """``MODEL_PRIORITY`` values (``DEFAULT`` is ``MEDIUM``)."""

    LOW = 0
    MEDIUM = 1
    HIGH = 2
    DEFAULT = 1


class ExecutionMode(PropertyEnum):
    """``EXECUTION_MODE_HINT``: ``ACCURACY`` keeps the model's precision (no lowering)."""

    PERFORMANCE = 1
    ACCURACY = 2


class SchedulingCoreType(PropertyEnum):
    ANY_CORE = 0
    PCORE_ONLY = 1
    ECORE_ONLY = 2


class ModelDistributionPolicy(PropertyEnum):
    TENSOR_PARALLEL = 0
    PIPELINE_PARALLEL = 1


performance_mode = rw("PERFORMANCE_HINT", enum_of(PerformanceMode))
num_requests = rw("PERFORMANCE_HINT_NUM_REQUESTS", UINT32)
inference_precision = rw("INFERENCE_PRECISION_HINT", TYPE)
execution_mode = rw("EXECUTION_MODE_HINT", enum_of(ExecutionMode))
model_priority = rw("MODEL_PRIORITY", enum_of(Priority))
enable_cpu_pinning = rw("ENABLE_CPU_PINNING", BOOL)
enable_cpu_reservation = rw("ENABLE_CPU_RESERVATION", BOOL)
enable_hyper_threading = rw("ENABLE_HYPER_THREADING", BOOL)
scheduling_core_type = rw("SCHEDULING_CORE_TYPE", enum_of(SchedulingCoreType))
model_distribution_policy = rw("MODEL_DISTRIBUTION_POLICY", set_of(ModelDistributionPolicy))
allow_auto_batching = rw("ALLOW_AUTO_BATCHING", BOOL)
dynamic_quantization_group_size = rw("DYNAMIC_QUANTIZATION_GROUP_SIZE", UINT64)
kv_cache_precision = rw("KV_CACHE_PRECISION", TYPE)
activations_scale_factor = rw("ACTIVATIONS_SCALE_FACTOR", FLOAT32)
compiled_blob = rw("COMPILED_BLOB", TENSOR)
model = rw("MODEL_PTR", MODEL)

name_keys(globals())
