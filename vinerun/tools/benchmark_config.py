"""Parsing benchmark_app's compound option values and turning flags into device properties.

``-shape "data[1,3,224,224],info[1,4]"``, ``-data_shape "[1,3,224,224][1,3,448,448]"``,
``-layout "[NCHW]"``, ``-nstreams "CPU:2,GPU:1"`` / ``-nstreams 2`` and
``-infer_precision bf16`` / ``-infer_precision CPU:bf16``.

>>> parse_input_map("data[1,3,224,224][1,3,448,448],info[1,4]")
{'data': ['1,3,224,224', '1,3,448,448'], 'info': ['1,4']}
>>> value_for_device("CPU:2,GPU:1", "CPU", "-nstreams")
'2'
"""

from __future__ import annotations

import re
from typing import Any

from vinerun.errors import InputError, VinerunError
from vinerun.ir.node import Output
from vinerun.ir.shape import PartialShape

HINTS = {"throughput": "THROUGHPUT", "tput": "THROUGHPUT", "cumulative_throughput": "CUMULATIVE_THROUGHPUT",
         "ctput": "CUMULATIVE_THROUGHPUT", "latency": "LATENCY", "none": None}

_ITEM = re.compile(r"\s*([^\[\],]*?)\s*((?:\[[^\]]*\])+)\s*(?:,|$)")


class BenchmarkArgumentError(VinerunError, ValueError):
    """A benchmark flag has a value that cannot be used; the message names the flag."""


def parse_input_map(text: str, flag: str = "-shape") -> dict[str, list[str]]:
    """``"a[1,2][3,4],b[5]"`` -> ``{"a": ["1,2", "3,4"], "b": ["5"]}``; an unnamed group has key ``""``."""
    out: dict[str, list[str]] = {}
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _ITEM.match(text, pos)
        if not m or m.end() == pos:
            raise BenchmarkArgumentError(
                f"{flag}: cannot parse '{text}' at position {pos}; expected e.g. "
                "\"input1[1,3,224,224],input2[1,4]\" or \"[1,3,224,224]\"")
        groups = re.findall(r"\[([^\]]*)\]", m.group(2))
        out.setdefault(m.group(1), []).extend(g.strip() for g in groups)
        pos = m.end()
    return out


def _port_names(port: Output) -> set[str]:
    return set(port.get_names()) | {port.node.friendly_name}


def _display(port: Output) -> str:
    names = port.get_names()
    return port.get_any_name() if names else port.node.friendly_name


def assign_to_inputs(mapping: dict[str, list[str]], inputs: list[Output], flag: str) -> dict[int, list[str]]:
    """Match the names of a parsed map to model input indices; ``""`` means every input."""
    out: dict[int, list[str]] = {}
    for name, values in mapping.items():
        if name == "":
            for i in range(len(inputs)):
                out[i] = values
            continue
        matches = [i for i, p in enumerate(inputs) if name in _port_names(p)]
        if not matches:
            known = ", ".join(_display(p) for p in inputs)
            raise InputError(f"{flag}: the model has no input named '{name}'. Inputs: {known}")
        out[matches[0]] = values
    return out


def parse_partial_shape(text: str, flag: str, input_name: str) -> PartialShape:
    try:
        return PartialShape.parse("[" + text + "]")
    except ValueError as e:
        raise BenchmarkArgumentError(f"{flag}: bad shape [{text}] for input '{input_name}': {e}") from None


def parse_static_shape(text: str, flag: str, input_name: str) -> list[int]:
    shape = parse_partial_shape(text, flag, input_name)
    if not shape.is_static:
        raise BenchmarkArgumentError(f"{flag}: shape [{text}] for input '{input_name}' must be static "
                                     "(data is generated with this shape)")
    return [int(d) for d in shape.to_shape()]


def value_for_device(text: str | None, device: str, flag: str) -> str | None:
    """``"2"`` or ``"CPU:2,GPU:1"`` -> the value for ``device`` (None if none is given for it)."""
    if text is None or text == "":
        return None
    if ":" not in text:
        return text.strip()
    found = None
    for part in text.split(","):
        if ":" not in part:
            raise BenchmarkArgumentError(f"{flag}: '{text}' mixes '<device>:<value>' pairs and plain values")
        dev, value = part.split(":", 1)
        if dev.strip().upper() == device.upper():
            found = value.strip()
    return found


def resolve_hint_and_api(hint: str | None, api: str | None, fine_tuned: bool) -> tuple[str | None, str]:
    """benchmark_app's rules: ``-api`` defaults to sync for ``latency`` and async otherwise; without
    ``-hint`` the hint is LATENCY for sync and THROUGHPUT for async, unless streams or threads were
    tuned by hand (then no hint is set). Returns ``(PERFORMANCE_HINT value or None, api)``."""
    if api is None:
        api = "sync" if hint == "latency" else "async"
    if hint is None:
        if fine_tuned:
            return None, api
        return ("LATENCY" if api == "sync" else "THROUGHPUT"), api
    if fine_tuned and hint != "none":
        raise BenchmarkArgumentError(
            "-nstreams and -nthreads are fine-tuning options: pass -hint none with them "
            "(a hint would choose streams and threads itself)")
    return HINTS[hint], api


def device_config(device: str, supported: dict[str, Any], hint: str | None, nstreams: str | None,
                  nthreads: int | None, precision: str | None, perf_count: bool) -> dict[str, Any]:
    """The compile config for one device; an explicit flag the device does not support is an error."""
    config: dict[str, Any] = {}

    def put(key: str, value: Any, flag: str, required: bool = True) -> None:
        if key in supported:
            config[key] = value
        elif required:
            raise BenchmarkArgumentError(f"{flag}: device {device} does not support property {key}")

    if hint is not None:
        put("PERFORMANCE_HINT", hint, "-hint", required=False)
    if nstreams is not None:
        value: Any = nstreams.upper() if nstreams.upper() == "AUTO" else _int(nstreams, "-nstreams")
        put("NUM_STREAMS", value, "-nstreams")
    if nthreads is not None:
        put("INFERENCE_NUM_THREADS", nthreads, "-nthreads")
    if precision is not None:
        put("INFERENCE_PRECISION_HINT", precision, "-infer_precision")
    if perf_count:
        put("PERF_COUNT", True, "-pc")
    return config


def _int(text: str, flag: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BenchmarkArgumentError(f"{flag}: expected an integer or AUTO, got '{text}'") from None
