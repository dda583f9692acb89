"""The properties of AUTO and MULTI, declared once (plugin table; the compiled model's is derived).

Keys the table does not know are *device* properties: AUTO passes them on to every candidate device
that supports them (``NUM_STREAMS``, ``INFERENCE_PRECISION_HINT``...), and refuses a key no candidate
supports. vinerun adds two read-only compiled-model properties OpenVINO does not have:

- ``AUTO_OUTPUTS_FROM_HELPER``: how many inferences were answered by the CPU start-up helper
  (0 = every output so far came from the target device);
- ``EXECUTED_REQUESTS_PER_DEVICE``: ``{device: successful inferences}``, e.g. for MULTI's load
  balance (``vinerun benchmark`` prints it).
"""

from __future__ import annotations

from vinerun.plugin_api.property_kinds import Bool, EnumOf, Int, Str
from vinerun.plugin_api.property_table import Prop, PropertyTable
from vinerun.properties import hint, intel_auto, log

OUTPUTS_FROM_HELPER = "AUTO_OUTPUTS_FROM_HELPER"
EXECUTED_REQUESTS = "EXECUTED_REQUESTS_PER_DEVICE"
PRIORITIES = "MULTI_DEVICE_PRIORITIES"
HINT = "PERFORMANCE_HINT"

PERFORMANCE_MODE = EnumOf(hint.PerformanceMode, aliases={"TPUT": "THROUGHPUT", "CTPUT": "CUMULATIVE_THROUGHPUT"})
LOG_LEVEL = EnumOf(log.Level, aliases={"LOG_NONE": "NO", "NONE": "NO", "LOG_ERROR": "ERR", "ERROR": "ERR",
                                       "LOG_WARNING": "WARNING", "LOG_INFO": "INFO", "LOG_DEBUG": "DEBUG",
                                       "LOG_TRACE": "TRACE"})

#: read-write keys of the plugin that its compiled models report (read-only)
TUNABLE = [
    Prop(PRIORITIES, Str(), "", doc="candidate devices in priority order, e.g. 'GNA,CPU' or '-GNA'"),
    Prop(HINT, PERFORMANCE_MODE, hint.PerformanceMode.LATENCY,
         doc="LATENCY: one device (+ CPU start-up helper); CUMULATIVE_THROUGHPUT: every candidate"),
    Prop("ENABLE_STARTUP_FALLBACK", Bool(), True, doc="serve the first requests on CPU while the target compiles"),
    Prop("ENABLE_RUNTIME_FALLBACK", Bool(), True, doc="re-run a failed inference on the next device"),
    Prop("SCHEDULE_POLICY", EnumOf(intel_auto.SchedulePolicy), intel_auto.SchedulePolicy.DEVICE_PRIORITY,
         doc="CUMULATIVE_THROUGHPUT: fill devices in priority order, or take turns"),
    Prop("MODEL_PRIORITY", EnumOf(hint.Priority), hint.Priority.MEDIUM,
         doc="a higher-priority model gets the best device first"),
    Prop("PERF_COUNT", Bool(), False, doc="passed on to the devices"),
    Prop("PERFORMANCE_HINT_NUM_REQUESTS", Int(0), 0, doc="passed on to the devices"),
    Prop("LOG_LEVEL", LOG_LEVEL, log.Level.NO),
]


def plugin_table(device: str, full_name: str, default_hint: hint.PerformanceMode) -> PropertyTable:
    """The table of the AUTO (or MULTI) plugin; ``default_hint`` is LATENCY for AUTO, CTPUT for MULTI."""
    tunable = [Prop(p.name, p.kind, default_hint, doc=p.doc) if p.name == HINT else p for p in TUNABLE]
    return PropertyTable(f"{device} plugin", [
        Prop("AVAILABLE_DEVICES", default=lambda: [""], mutability="RO"),
        Prop("FULL_DEVICE_NAME", default=full_name, mutability="RO"),
        Prop("OPTIMIZATION_CAPABILITIES", default=lambda: [], mutability="RO"),
        *tunable,
        Prop("CACHE_DIR", Str(), "", doc="passed on to the devices (the target's blob skips the CPU helper)"),
    ])


def compiled_table(plugin: PropertyTable, device: str) -> PropertyTable:
    """The compiled model's table: the tunable keys read-only, plus facts about the compiled model."""
    return plugin.derive(f"{device} compiled model", [p.name for p in TUNABLE], extra=[
        Prop("NETWORK_NAME", mutability="RO"),
        Prop("OPTIMAL_NUMBER_OF_INFER_REQUESTS", mutability="RO"),
        Prop("EXECUTION_DEVICES", mutability="RO"),
        Prop("LOADED_FROM_CACHE", default=False, mutability="RO"),
        Prop(OUTPUTS_FROM_HELPER, mutability="RO", doc="inferences answered by the CPU start-up helper"),
        Prop(EXECUTED_REQUESTS, mutability="RO", doc="{device: successful inferences}"),
    ])
