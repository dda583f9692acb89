"""``properties.intel_gpu.hint``: GPU queue priority and throttling, host task priority, memory budget.

``ThrottleLevel`` is not an enum of its own: its members are ``hint.Priority`` values, as in OpenVINO
(``str(ThrottleLevel.LOW) == "Priority.LOW"``).
"""

from __future__ import annotations

from vinerun.properties._key import BOOL, INT64, enum_of, name_keys, rw
from vinerun.properties.hint import Priority


class ThrottleLevel:
    """``GPU_QUEUE_THROTTLE`` levels (``hint.Priority`` members)."""

    LOW = Priority.LOW
    MEDIUM = Priority.MEDIUM
    HIGH = Priority.HIGH
    DEFAULT = Priority.DEFAULT


queue_throttle = rw("GPU_QUEUE_THROTTLE", enum_of(Priority))
queue_priority = rw("GPU_QUEUE_PRIORITY", enum_of(Priority))
host_task_priority = rw("GPU_HOST_TASK_PRIORITY", enum_of(Priority))
available_device_mem = rw("AVAILABLE_DEVICE_MEM_SIZE", INT64)
enable_large_allocations = rw("GPU_ENABLE_LARGE_ALLOCATIONS", BOOL)
enable_lora_operation = rw("GPU_ENABLE_LORA_OPERATION", BOOL)

name_keys(globals())
