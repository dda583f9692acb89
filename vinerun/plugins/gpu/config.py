"""The GPU device's properties, declared once (OpenVINO's GPU keys): kind, RO/RW, default.

Device facts (name, memory, units) are read-only and answered for the device ``DEVICE_ID`` names (see
:meth:`..plugin.GPUPlugin.read_property`). The compiled model's table is the plugin's tunable keys, read-only,
plus facts about the compiled model.
"""

from __future__ import annotations

import enum

from vinerun.ir.types import Type
from vinerun.plugin_api.property_kinds import Bool, EnumOf, Int, Precision, Str, Streams
from vinerun.plugin_api.property_table import Prop, PropertyTable, PropertyValues
from vinerun.properties import hint, log


class TuningMode(enum.Enum):
    """``TUNING_MODE``: what the kernel autotuner does with ``TUNING_FILE``."""

    TUNING_DISABLED = 0
    TUNING_CREATE = 1  # tune kernels not in the file, add them
    TUNING_USE_EXISTING = 2  # read the file, tune nothing
    TUNING_RETUNE = 3  # tune every kernel again, rewrite the file


class Throttle(enum.Enum):
    """How the host waits for the device (``GPU_PLUGIN_THROTTLE`` / ``GPU_QUEUE_THROTTLE``): HIGH spins (lowest
    latency, one core busy), MEDIUM yields, LOW blocks (no CPU used while waiting)."""

    LOW = 0
    MEDIUM = 1
    HIGH = 2


PERFORMANCE_MODE = EnumOf(hint.PerformanceMode, aliases={"TPUT": "THROUGHPUT", "CTPUT": "CUMULATIVE_THROUGHPUT"})
PRIORITY = EnumOf(hint.Priority)
THROTTLE = EnumOf(Throttle, aliases={"DEFAULT": "MEDIUM", "0": "LOW", "1": "MEDIUM", "2": "HIGH"})

#: keys both the plugin (read-write) and its compiled models (read-only) have
TUNABLE = [
    Prop("INFERENCE_PRECISION_HINT", Precision(["f16", "f32", "bf16", "dynamic"]), Type.f16,
         doc="float compute precision; f16 by default, as OpenVINO's GPU plugin"),
    Prop("PERFORMANCE_HINT", PERFORMANCE_MODE, hint.PerformanceMode.LATENCY),
    Prop("PERFORMANCE_HINT_NUM_REQUESTS", Int(0), 0),
    Prop("EXECUTION_MODE_HINT", EnumOf(hint.ExecutionMode), hint.ExecutionMode.PERFORMANCE,
         doc="ACCURACY: the model's own float types (no f16 lowering)"),
    Prop("NUM_STREAMS", Streams(), 1, doc="streams, each a device queue with its own requests; AUTO = 2"),
    Prop("PERF_COUNT", Bool(), False, doc="per-node profiling (device time from CUDA events)"),
    Prop("MODEL_PRIORITY", PRIORITY, hint.Priority.MEDIUM, doc="device queue (CUDA stream) priority"),
    Prop("GPU_QUEUE_PRIORITY", PRIORITY, hint.Priority.MEDIUM, doc="as MODEL_PRIORITY"),
    Prop("GPU_HOST_TASK_PRIORITY", PRIORITY, hint.Priority.MEDIUM),
    Prop("GPU_QUEUE_THROTTLE", THROTTLE, Throttle.MEDIUM, doc="how the host waits: HIGH spin, MEDIUM yield, LOW block"),
    Prop("EXCLUSIVE_ASYNC_REQUESTS", Bool(), False, doc="all compiled models share one queue"),
    Prop("GPU_ENABLE_LOOP_UNROLLING", Bool(), True, doc="unroll TensorIterator / Loop with a fixed count"),
    Prop("GPU_DISABLE_WINOGRAD_CONVOLUTION", Bool(), False),
    Prop("ENABLE_FP16_FOR_QUANTIZED_MODELS", Bool(), True,
         doc="quantized models (FakeQuantize, Q/DQ) run their float layers in f16 (YES) or f32 (NO)"),
    Prop("GPU_NV12_TWO_INPUTS", Bool(), False, doc="NV12 inputs as two planes (Y, UV)"),
    Prop("COMPILATION_NUM_THREADS", Int(0), 0, doc="threads compiling kernels; 0 = all cores"),
    Prop("TUNING_MODE", EnumOf(TuningMode), TuningMode.TUNING_DISABLED),
    Prop("TUNING_FILE", Str(), "", doc="kernel tuning results (JSON), written once and reused"),
    Prop("CONFIG_FILE", Str(), "", doc="custom layers: a JSON file naming a Triton kernel per op type"),
    Prop("GPU_DUMP_GRAPHS_PATH", Str(), "", doc="write the compiled graph (.dot) and kernel sources here"),
    Prop("LOG_LEVEL", EnumOf(log.Level), log.Level.NO),
]

ALIASES = {"GPU_THROUGHPUT_STREAMS": "NUM_STREAMS", "GPU_PLUGIN_PRIORITY": "MODEL_PRIORITY",
           "GPU_PLUGIN_THROTTLE": "GPU_QUEUE_THROTTLE", "GPU_MAX_NUM_THREADS": "COMPILATION_NUM_THREADS",
           "CLDNN_ENABLE_FP16_FOR_QUANTIZED_MODELS": "ENABLE_FP16_FOR_QUANTIZED_MODELS"}

#: device facts; their values come from the device DEVICE_ID names (the plugin answers them)
DEVICE_FACTS = ("AVAILABLE_DEVICES", "FULL_DEVICE_NAME", "DEVICE_ARCHITECTURE", "DEVICE_TYPE", "DEVICE_UUID",
                "GPU_DEVICE_TOTAL_MEM_SIZE", "GPU_EXECUTION_UNITS_COUNT", "OPTIMIZATION_CAPABILITIES",
                "GPU_MEMORY_STATISTICS", "RANGE_FOR_ASYNC_INFER_REQUESTS", "RANGE_FOR_STREAMS",
                "OPTIMAL_BATCH_SIZE", "MAX_BATCH_SIZE", "EXECUTION_DEVICES", "DEVICE_GOPS")

PLUGIN_TABLE = PropertyTable("GPU plugin", [
    *(Prop(name, mutability="RO") for name in DEVICE_FACTS),
    *TUNABLE,
    Prop("DEVICE_ID", Str(), "", doc="which GPU: '0', '1', ... ('' = GPU.0)"),
    Prop("CACHE_DIR", Str(), "", doc="model cache; also compiled Triton kernels and tuning results"),
])

COMPILED_TABLE = PLUGIN_TABLE.derive("GPU compiled model", [p.name for p in TUNABLE], extra=[
    Prop("NETWORK_NAME", mutability="RO"),
    Prop("OPTIMAL_NUMBER_OF_INFER_REQUESTS", mutability="RO"),
    Prop("EXECUTION_DEVICES", mutability="RO"),
    Prop("LOADED_FROM_CACHE", default=False, mutability="RO"),
    Prop("DEVICE_ID", mutability="RO"),
    Prop("GPU_MEMORY_STATISTICS", mutability="RO"),
])


def effective_precision(values: PropertyValues) -> Type:
    """The float type the compiled model computes in: the hint, or the model's own (``dynamic``) under
    ``EXECUTION_MODE_HINT=ACCURACY`` when no hint was set."""
    if not values.is_set("INFERENCE_PRECISION_HINT") and (
            values.get("EXECUTION_MODE_HINT") == hint.ExecutionMode.ACCURACY):
        return Type.dynamic
    return values.get("INFERENCE_PRECISION_HINT")
