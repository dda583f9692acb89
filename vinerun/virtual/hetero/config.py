"""The properties of HETERO, declared once (plugin table; the compiled model's is derived).

Keys the table does not know are *device* properties: HETERO passes each one on to every device of
its priority list that supports it (``GNA_DEVICE_MODE``, ``NUM_STREAMS``...), and refuses a key no
device supports. ``HETERO_DUMP_GRAPH_DOT`` (or the environment variable ``OPENVINO_HETERO_VISUALIZE``,
as in OpenVINO) writes ``hetero_affinity_<model>.dot`` and ``hetero_subgraphs_<model>.dot`` into
the current directory at compile time.
"""

from __future__ import annotations

import os

from vinerun.errors import DeviceError
from vinerun.plugin_api.property_kinds import Bool, EnumOf, Str
from vinerun.plugin_api.property_table import Prop, PropertyTable
from vinerun.properties import hint

PRIORITIES = "MULTI_DEVICE_PRIORITIES"
DUMP_DOT = "HETERO_DUMP_GRAPH_DOT"
NUM_SUBMODELS = "HETERO_NUMBER_OF_SUBMODELS"
VISUALIZE_ENV = "OPENVINO_HETERO_VISUALIZE"

PERFORMANCE_MODE = EnumOf(hint.PerformanceMode, aliases={"TPUT": "THROUGHPUT", "CTPUT": "CUMULATIVE_THROUGHPUT"})

#: keys HETERO keeps for itself (everything else goes to the devices)
OWN = (PRIORITIES, DUMP_DOT)
#: read-write keys of the plugin that its compiled models report (read-only)
TUNABLE = [
    Prop(PRIORITIES, Str(), "", doc="devices in priority order, e.g. 'GNA,CPU'"),
    Prop(DUMP_DOT, Bool(), False, doc="write the affinity and subgraph .dot files when compiling"),
    Prop("PERF_COUNT", Bool(), False, doc="passed on to the devices"),
    Prop("PERFORMANCE_HINT", PERFORMANCE_MODE, hint.PerformanceMode.LATENCY, doc="passed on to the devices"),
]

PLUGIN_TABLE = PropertyTable("HETERO plugin", [
    Prop("AVAILABLE_DEVICES", default=lambda: [""], mutability="RO"),
    Prop("FULL_DEVICE_NAME", default="HETERO", mutability="RO"),
    Prop("DEVICE_CAPABILITIES", default=lambda: [], mutability="RO"),
    *TUNABLE,
])

COMPILED_TABLE = PLUGIN_TABLE.derive("HETERO compiled model", [p.name for p in TUNABLE], extra=[
    Prop("NETWORK_NAME", mutability="RO"),
    Prop("OPTIMAL_NUMBER_OF_INFER_REQUESTS", mutability="RO"),
    Prop("EXECUTION_DEVICES", mutability="RO"),
    Prop(NUM_SUBMODELS, mutability="RO", doc="how many subgraphs the model was split into"),
])


def parse_priorities(text: str) -> list[str]:
    """``"GNA,CPU"`` -> ``["GNA", "CPU"]``; an empty list is an error that says how to name devices."""
    devices = [d.strip() for d in str(text).split(",") if d.strip()]
    if not devices:
        raise DeviceError("HETERO needs devices in priority order: compile for 'HETERO:GNA,CPU' or set "
                          f"{PRIORITIES} (e.g. {{'{PRIORITIES}': 'GNA,CPU'}})")
    if len(set(d.upper() for d in devices)) != len(devices):
        raise DeviceError(f"HETERO device list {text!r} names a device twice")
    return devices


def dump_requested(values_flag: bool) -> bool:
    """Whether to write the .dot files: the property, or ``OPENVINO_HETERO_VISUALIZE`` set (OpenVINO's rule)."""
    return values_flag or os.environ.get(VISUALIZE_ENV) is not None
