"""``DEVICE_PROPERTIES`` under a virtual device: passed on whole to each compile it asks for.

The Core merges ``DEVICE_PROPERTIES[device]`` into the config of the device compiled (and keeps the other
entries when that device is virtual too), so ``AUTO`` with ``{"DEVICE_PROPERTIES": {"CPU": {...}}}`` sets
CPU's values on CPU only, and the CPU plugin itself rejects a key it does not know.
"""

from __future__ import annotations

from typing import Any

DEVICE_PROPERTIES = "DEVICE_PROPERTIES"


def with_device_properties(device_config: dict[str, Any], passed: dict[str, Any]) -> dict[str, Any]:
    """``device_config`` plus the ``DEVICE_PROPERTIES`` entry of ``passed`` (if any)."""
    if passed.get(DEVICE_PROPERTIES):
        return {**device_config, DEVICE_PROPERTIES: passed[DEVICE_PROPERTIES]}
    return device_config


def device_keys(passed: dict[str, Any]) -> list[str]:
    """The keys of ``passed`` that some device must support (``DEVICE_PROPERTIES`` is not one)."""
    return [k for k in passed if k != DEVICE_PROPERTIES]
