"""``properties.intel_auto``: keys of the AUTO and MULTI virtual devices."""

from __future__ import annotations

from vinerun.properties._key import BOOL, STR, PropertyEnum, enum_of, name_keys, rw


class SchedulePolicy(PropertyEnum):
    """How CUMULATIVE_THROUGHPUT spreads requests (``DEFAULT`` is ``DEVICE_PRIORITY``)."""

    ROUND_ROBIN = 0
    DEVICE_PRIORITY = 1
    DEFAULT = 1


device_bind_buffer = rw("DEVICE_BIND_BUFFER", BOOL)
enable_startup_fallback = rw("ENABLE_STARTUP_FALLBACK", BOOL)
enable_runtime_fallback = rw("ENABLE_RUNTIME_FALLBACK", BOOL)
schedule_policy = rw("SCHEDULE_POLICY", enum_of(SchedulePolicy))
low_power_device = rw("LOW_POWER_DEVICE", STR)
devices_utilization_threshold = rw("DEVICES_UTILIZATION_THRESHOLD")
perf_curve_table = rw("PERF_CURVE_TABLE")

name_keys(globals())
