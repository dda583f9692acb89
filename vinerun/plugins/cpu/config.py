"""The CPU device's properties, declared once: kind, RO/RW, default.

The compiled model's table is derived from the plugin's (the same keys, read-only, plus facts
about the compiled model). The effective precision (:func:`effective_precision`) is what the compiled
model reports and what it computes in: bf16 lowers the heavy ops and their neighbours to bf16
(:mod:`vinerun.plugins.cpu.precision`); f16 is reported where the CPU has it but computes in f32.
"""

from __future__ import annotations

import sys

from vinerun.ir.types import Type
from vinerun.plugin_api.property_kinds import Bool, EnumOf, Float, Int, Precision, Str, Streams
from vinerun.plugin_api.property_table import Prop, PropertyTable, PropertyValues
from vinerun.plugins.cpu import device_info
from vinerun.properties import device, hint, intel_cpu, log

PERFORMANCE_MODE = EnumOf(hint.PerformanceMode, aliases={"TPUT": "THROUGHPUT", "CTPUT": "CUMULATIVE_THROUGHPUT"})
LOG_LEVEL = EnumOf(log.Level, aliases={"LOG_NONE": "NO", "NONE": "NO", "LOG_ERROR": "ERR", "ERROR": "ERR",
                                       "LOG_WARNING": "WARNING", "LOG_INFO": "INFO", "LOG_DEBUG": "DEBUG",
                                       "LOG_TRACE": "TRACE"})


def default_precision() -> Type:
    """bf16 where the CPU computes it natively (AMX / AVX512-BF16), as OpenVINO; f32 elsewhere."""
    return Type.bf16 if device_info.has_native_bf16() else Type.f32


#: keys both the plugin (read-write) and its compiled models (read-only) have
TUNABLE = [
    Prop("NUM_STREAMS", Streams(), 1, doc="streams (parallel executors); AUTO = as many as THROUGHPUT gives"),
    Prop("INFERENCE_NUM_THREADS", Int(0), 0, doc="threads in all; 0 = every core"),
    Prop("PERF_COUNT", Bool(), False, doc="collect per-node profiling counters"),
    Prop("INFERENCE_PRECISION_HINT", Precision(["f32", "bf16", "f16", "dynamic"]), default_precision,
         doc="precision of floating-point compute"),
    Prop("PERFORMANCE_HINT", PERFORMANCE_MODE, hint.PerformanceMode.LATENCY),
    Prop("EXECUTION_MODE_HINT", EnumOf(hint.ExecutionMode), hint.ExecutionMode.PERFORMANCE,
         doc="ACCURACY: no precision lowering"),
    Prop("PERFORMANCE_HINT_NUM_REQUESTS", Int(0), 0, doc="cap on requests in flight for the hints; 0 = none"),
    Prop("ENABLE_CPU_PINNING", Bool(), sys.platform.startswith("linux"),
         doc="bind each stream thread (and its OpenMP team) to its CPUs (default on Linux, as OpenVINO)"),
    Prop("ENABLE_HYPER_THREADING", Bool(), True, doc="use every hardware thread of a core (default: under the "
         "throughput hints only, as OpenVINO)"),
    Prop("SCHEDULING_CORE_TYPE", EnumOf(hint.SchedulingCoreType), hint.SchedulingCoreType.ANY_CORE),
    Prop("CPU_DENORMALS_OPTIMIZATION", Bool(), False),
    Prop("CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE", Float(), 1.0),
    Prop("TBB_PARTITIONER", EnumOf(intel_cpu.TbbPartitioner), intel_cpu.TbbPartitioner.STATIC),
    Prop("DYNAMIC_QUANTIZATION_GROUP_SIZE", Int(0), 32),
    Prop("LOG_LEVEL", LOG_LEVEL, log.Level.NO),
    Prop("CPU_RUNTIME_CACHE_CAPACITY", Int(0), 5000,
         doc="shape-keyed caches; 0 = no plans specialized to the input shapes of a dynamic model's calls"),
]

PLUGIN_TABLE = PropertyTable("CPU plugin", [
    Prop("AVAILABLE_DEVICES", default=lambda: [""], mutability="RO"),
    Prop("RANGE_FOR_ASYNC_INFER_REQUESTS", default=(1, 1, 1), mutability="RO"),
    Prop("RANGE_FOR_STREAMS", default=lambda: (1, device_info.core_count()), mutability="RO"),
    Prop("EXECUTION_DEVICES", default=lambda: ["CPU"], mutability="RO"),
    Prop("FULL_DEVICE_NAME", default=device_info.cpu_name, mutability="RO"),
    Prop("OPTIMIZATION_CAPABILITIES", default=device_info.optimization_capabilities, mutability="RO"),
    Prop("DEVICE_TYPE", default=device.Type.INTEGRATED, mutability="RO"),
    Prop("DEVICE_ARCHITECTURE", default=device_info.architecture, mutability="RO"),
    *TUNABLE,
    Prop("DEVICE_ID", Str(), ""),
    Prop("CACHE_DIR", Str(), "", doc="model cache directory (the Core's cache uses it)"),
])

COMPILED_TABLE = PLUGIN_TABLE.derive("CPU compiled model", [p.name for p in TUNABLE], extra=[
    Prop("NETWORK_NAME", mutability="RO"),
    Prop("OPTIMAL_NUMBER_OF_INFER_REQUESTS", mutability="RO"),
    Prop("EXECUTION_DEVICES", default=lambda: ["CPU"], mutability="RO"),
    Prop("LOADED_FROM_CACHE", default=False, mutability="RO"),
])


def effective_precision(values: PropertyValues) -> Type:
    """The precision the compiled model reports: an explicit hint (if the CPU has it natively, else f32),
    else ``dynamic`` (the model's own) under ``EXECUTION_MODE_HINT=ACCURACY``, else the default."""
    if values.is_set("INFERENCE_PRECISION_HINT"):
        wanted = values.get("INFERENCE_PRECISION_HINT")
        native = {Type.f32, Type.dynamic} | ({Type.bf16} if device_info.has_native_bf16() else set())
        if "avx512_fp16" in device_info.cpu_flags():
            native.add(Type.f16)
        return wanted if wanted in native else Type.f32
    if values.get("EXECUTION_MODE_HINT") == hint.ExecutionMode.ACCURACY:
        return Type.dynamic
    return default_precision()
