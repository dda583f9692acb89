"""``properties.device``: what a device is (name, architecture, capabilities) and per-device config."""

from __future__ import annotations

from typing import Any

from vinerun.properties._key import Property, PropertyEnum, ro, rw


class Type(PropertyEnum):
    """``DEVICE_TYPE`` values."""

    INTEGRATED = 0
    DISCRETE = 1


class Capability:
    """``OPTIMIZATION_CAPABILITIES`` entries."""

    FP32 = "FP32"
    BF16 = "BF16"
    FP16 = "FP16"
    INT8 = "INT8"
    INT16 = "INT16"
    BIN = "BIN"
    WINOGRAD = "WINOGRAD"
    EXPORT_IMPORT = "EXPORT_IMPORT"


class _DeviceProperties(Property):
    """``DEVICE_PROPERTIES``: ``properties({"CPU": {...}})`` or ``properties("CPU", {...})``."""

    def __call__(self, *args: Any) -> Any:
        if len(args) == 2 and isinstance(args[0], str):
            return (str(self), {args[0]: dict(args[1])})
        return super().__call__(*args)


full_name = ro("FULL_DEVICE_NAME")
architecture = ro("DEVICE_ARCHITECTURE")
type = ro("DEVICE_TYPE")  # noqa: A001 - OpenVINO's name
gops = ro("DEVICE_GOPS")
thermal = ro("DEVICE_THERMAL")
uuid = ro("DEVICE_UUID")
luid = ro("DEVICE_LUID")
pci_info = ro("DEVICE_PCI_INFO")
capabilities = ro("OPTIMIZATION_CAPABILITIES")
id = rw("DEVICE_ID")  # noqa: A001 - OpenVINO's name
priorities = rw("MULTI_DEVICE_PRIORITIES")
properties = _DeviceProperties("DEVICE_PROPERTIES", "RW")
