"""``properties.device``: what a device is (name, architecture, capabilities) and per-device config."""

from __future__ import annotations

from typing import Any

from vinerun.properties._key import STR, Property, PropertyEnum, name_keys, ovany, ro, rw, unwrap


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
    """``DEVICE_PROPERTIES``: ``properties({"CPU": {key: value}}, ...)``, dicts of device name -> config."""

    def __call__(self, *args: Any) -> Any:
        if not args:
            return str(self)
        value: dict[str, Any] = {}
        for arg in args:
            if not isinstance(arg, dict):
                raise TypeError(f"Incorrect passed value: {arg}, expected dictionary instead of "
                                f"{arg.__class__.__name__}")
            for dev, config in arg.items():
                if not isinstance(dev, str):
                    raise TypeError(f"Incorrect passed key in value: {dev}, expected string instead of "
                                    f"{dev.__class__.__name__}")
                config = unwrap(config)
                value[str(dev)] = {str(k): v for k, v in config.items()} if isinstance(config, dict) else config
        return (str(self), ovany(value))


class _Priorities(Property):
    """``MULTI_DEVICE_PRIORITIES``: ``priorities("CPU", "GPU")`` -> ``"CPU,GPU,"`` (each name followed by a comma,
    as OpenVINO writes it)."""

    def __call__(self, *args: Any) -> Any:
        if not args:
            return str(self)
        for arg in args:
            if not isinstance(arg, str):
                raise TypeError(f"Incorrect passed value: {arg} , expected string values.")
        return (str(self), ovany("".join(f"{arg}," for arg in args)))


full_name = ro("FULL_DEVICE_NAME")
architecture = ro("DEVICE_ARCHITECTURE")
type = ro("DEVICE_TYPE")  # noqa: A001 - OpenVINO's name
gops = ro("DEVICE_GOPS")
thermal = ro("DEVICE_THERMAL")
uuid = ro("DEVICE_UUID")
luid = ro("DEVICE_LUID")
pci_info = ro("DEVICE_PCI_INFO")
capabilities = ro("OPTIMIZATION_CAPABILITIES")
id = rw("DEVICE_ID", STR)  # noqa: A001 - OpenVINO's name
priorities = _Priorities("MULTI_DEVICE_PRIORITIES", "RW", STR)
properties = _DeviceProperties("DEVICE_PROPERTIES", "RW")

name_keys(globals())
