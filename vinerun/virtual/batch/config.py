"""The properties of BATCH, declared once (plugin table; the compiled model's is derived).

The device and batch size come from the device string (``BATCH:CPU(8)``, passed by the Core as
``MULTI_DEVICE_PRIORITIES``) or from ``AUTO_BATCH_DEVICE_CONFIG`` (OpenVINO's key, same syntax).
Keys the table does not know go to the device. vinerun adds two read-only compiled-model properties
OpenVINO does not have: ``AUTO_BATCH_SIZE`` (the batch actually used; 1 = not batched) and
``AUTO_BATCH_DISABLED_REASON`` (why not; empty when batched).
"""

from __future__ import annotations

import re

from vinerun.errors import DeviceError
from vinerun.plugin_api.property_kinds import Bool, EnumOf, Int, Precision, Str, Streams
from vinerun.plugin_api.property_table import Prop, PropertyTable
from vinerun.properties import hint

PRIORITIES = "MULTI_DEVICE_PRIORITIES"
DEVICE_CONFIG = "AUTO_BATCH_DEVICE_CONFIG"
TIMEOUT = "AUTO_BATCH_TIMEOUT"
ALLOW = "ALLOW_AUTO_BATCHING"
BATCH_SIZE = "AUTO_BATCH_SIZE"
DISABLED_REASON = "AUTO_BATCH_DISABLED_REASON"

PERFORMANCE_MODE = EnumOf(hint.PerformanceMode, aliases={"TPUT": "THROUGHPUT", "CTPUT": "CUMULATIVE_THROUGHPUT"})

#: keys BATCH keeps for itself (everything else goes to the device)
OWN = (PRIORITIES, DEVICE_CONFIG, TIMEOUT, ALLOW)
TUNABLE = [
    Prop(PRIORITIES, Str(), "", doc="device and batch size, e.g. 'CPU(8)'"),
    Prop(DEVICE_CONFIG, Str(), "", doc="OpenVINO's name for the same, e.g. 'CPU(8)'"),
    Prop(TIMEOUT, Int(0), 1000, doc="ms to wait for a full batch; then the requests gathered run unbatched"),
    Prop(ALLOW, Bool(), True, doc="False: run every request as is on the device"),
]
#: device keys BATCH lists (so tools see them) and passes on
PASSED_ON = [
    Prop("PERFORMANCE_HINT", PERFORMANCE_MODE, hint.PerformanceMode.LATENCY, doc="passed on to the device"),
    Prop("PERF_COUNT", Bool(), False, doc="passed on to the device"),
    Prop("NUM_STREAMS", Streams(), 1, doc="passed on to the device"),
    Prop("INFERENCE_NUM_THREADS", Int(0), 0, doc="passed on to the device"),
    Prop("INFERENCE_PRECISION_HINT", Precision(["f32", "bf16", "f16", "dynamic"]), "f32",
         doc="passed on to the device"),
    Prop("PERFORMANCE_HINT_NUM_REQUESTS", Int(0), 0, doc="passed on to the device"),
]

PLUGIN_TABLE = PropertyTable("BATCH plugin", [
    Prop("AVAILABLE_DEVICES", default=lambda: [""], mutability="RO"),
    Prop("FULL_DEVICE_NAME", default="BATCH", mutability="RO"),
    *TUNABLE,
    *PASSED_ON,
])

COMPILED_TABLE = PLUGIN_TABLE.derive("BATCH compiled model", [p.name for p in TUNABLE if p.name != TIMEOUT], extra=[
    Prop(TIMEOUT, Int(0), 1000, doc="can change after compilation, as in OpenVINO"),
    Prop("NETWORK_NAME", mutability="RO"),
    Prop("OPTIMAL_NUMBER_OF_INFER_REQUESTS", mutability="RO"),
    Prop("EXECUTION_DEVICES", mutability="RO"),
    Prop(BATCH_SIZE, mutability="RO", doc="requests per batched execution; 1 = not batched"),
    Prop(DISABLED_REASON, mutability="RO", doc="why the model runs unbatched ('' when batched)"),
])

_SPEC = re.compile(r"^\s*([A-Za-z][\w.]*)\s*(?:\(\s*(\d+)\s*\))?\s*$")


def parse_device(text: str) -> tuple[str, int | None]:
    """``"CPU(8)"`` -> ``("CPU", 8)``; ``"CPU"`` -> ``("CPU", None)`` (the device's OPTIMAL_BATCH_SIZE)."""
    match = _SPEC.match(str(text))
    if not match:
        raise DeviceError(f"BATCH: cannot read device {text!r}: write one device with an optional batch size, "
                          "e.g. 'BATCH:CPU(8)' or AUTO_BATCH_DEVICE_CONFIG='CPU(8)'")
    size = None if match.group(2) is None else int(match.group(2))
    if size is not None and size < 1:
        raise DeviceError(f"BATCH: batch size must be at least 1, got {text!r}")
    return match.group(1), size
