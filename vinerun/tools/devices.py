"""``vinerun devices``: every available device and its properties (OpenVINO's hello_query_device)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from vinerun.runtime.core import Core


def format_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return " ".join(f"{k}:{format_value(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "YES" if value else "NO"
    return str(value)


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
        print(json.dumps(devices, indent=2, default=str))
        return 0
    print("[ INFO ] Available devices:")
    for device, props in devices.items():
        print(f"[ INFO ] {device} :")
        print("[ INFO ] \tSUPPORTED_PROPERTIES:")
        for key, value in props.items():
            print(f"[ INFO ] \t\t{key} : {format_value(value)}")
        print("[ INFO ]")
    return 0
