"""``vinerun devices``: every available device and its properties (OpenVINO's hello_query_device)."""

from __future__ import annotations

import argparse
import enum
import json
from typing import Any

from vinerun.runtime.core import Core


def format_value(value: Any) -> str:
    """A typed property value as hello_query_device prints it: enums by name, types by short name."""
    if isinstance(value, bool):
        return "YES" if value else "NO"
    if isinstance(value, enum.Enum):
        return value.name
    if hasattr(value, "get_type_name"):
        return value.get_type_name()
    if isinstance(value, (list, tuple)):
        return " ".join(format_value(v) for v in value) if value != [""] else '""'
    if isinstance(value, dict):
        return " ".join(f"{k}:{format_value(v)}" for k, v in value.items())
    return str(value)


def _plain(value: Any) -> Any:
    """A value JSON can hold (enums and types by name)."""
    if isinstance(value, enum.Enum):
        return value.name
    if hasattr(value, "get_type_name"):
        return value.get_type_name()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


def query_devices(core: Core) -> dict[str, dict[str, Any]]:
    """``{device: {property: value}}`` for every available device (values as the device returns them)."""
    out: dict[str, dict[str, Any]] = {}
    for device in core.available_devices:
        props: dict[str, Any] = {}
        for key in core.get_property(device, "SUPPORTED_PROPERTIES"):
            if key == "SUPPORTED_PROPERTIES":
                continue
            try:
                props[key] = core.get_property(device, key)
            except Exception as e:  # noqa: BLE001 - show the failure instead of hiding the device
                props[key] = f"<error: {e}>"
        out[device] = props
    return out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("devices", help="list available devices and their properties (like hello_query_device)",
                       description="List every available device with all of its supported properties.")
    p.add_argument("--json", action="store_true", help="print JSON instead of the hello_query_device text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    core = Core()
    devices = query_devices(core)
    if args.json:
        print(json.dumps({d: {k: _plain(v) for k, v in p.items()} for d, p in devices.items()}, indent=2))
        return 0
    print("[ INFO ] Available devices:")
    for device, props in devices.items():
        modes = core.get_property(device, "SUPPORTED_PROPERTIES")
        print(f"[ INFO ] {device} :")
        print("[ INFO ] \tSUPPORTED_PROPERTIES:")
        for key, value in props.items():
            mode = "Mutable" if modes.get(key) == "RW" else "Immutable"
            print(f"[ INFO ] \t\t{mode}: {key} : {format_value(value)}")
        print("[ INFO ]")
    return 0
