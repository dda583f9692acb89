"""``properties.hint``: what the user wants (latency or throughput, precision, priority)."""

from __future__ import annotations

from vinerun.properties._key import PropertyEnum, rw


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


performance_mode = rw("PERFORMANCE_HINT")
num_requests = rw("PERFORMANCE_HINT_NUM_REQUESTS")
inference_precision = rw("INFERENCE_PRECISION_HINT")
execution_mode = rw("EXECUTION_MODE_HINT")
model_priority = rw("MODEL_PRIORITY")
enable_cpu_pinning = rw("ENABLE_CPU_PINNING")
enable_cpu_reservation = rw("ENABLE_CPU_RESERVATION")
enable_hyper_threading = rw("ENABLE_HYPER_THREADING")
scheduling_core_type = rw("SCHEDULING_CORE_TYPE")
model_distribution_policy = rw("MODEL_DISTRIBUTION_POLICY")
allow_auto_batching = rw("ALLOW_AUTO_BATCHING")
dynamic_quantization_group_size = rw("DYNAMIC_QUANTIZATION_GROUP_SIZE")
kv_cache_precision = rw("KV_CACHE_PRECISION")
activations_scale_factor = rw("ACTIVATIONS_SCALE_FACTOR")
compiled_blob = rw("COMPILED_BLOB")
model = rw("MODEL_PTR")
