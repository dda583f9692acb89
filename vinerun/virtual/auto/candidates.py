"""Which devices AUTO and MULTI may use, in which order, and which of them can run a model.

- The list comes from ``MULTI_DEVICE_PRIORITIES`` (the device string's suffix: ``AUTO:GNA,CPU``), in
  the order given; without one, every available real device in the default order: discrete GPU >
  integrated GPU > other accelerators > CPU. GNA is used only when named (as in OpenVINO).
- ``-DEV`` entries exclude a device: ``AUTO:-GNA``, ``AUTO:GPU,-CPU``.
- A device is *capable* when its ``OPTIMIZATION_CAPABILITIES`` cover the model's precision and its
  ``query_model`` covers every node.

>>> parse_priorities("GNA, cpu ,-GPU")
(['GNA', 'CPU'], {'GPU'})
"""

from __future__ import annotations

from typing import Any

from vinerun.errors import DeviceError
from vinerun.ir.model import Model
from vinerun.properties import device as device_props

#: virtual devices are never candidates of another virtual device
VIRTUAL = frozenset({"AUTO", "MULTI", "HETERO", "BATCH"})
#: used only when the user names them
ONLY_WHEN_NAMED = frozenset({"GNA"})
_WEIGHTED = {"Convolution", "GroupConvolution", "MatMul", "ConvolutionBackpropData", "FullyConnected"}
_QUANTIZED = {"FakeQuantize", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
_PRECISION = {"f32": "FP32", "f16": "FP16", "bf16": "BF16", "i8": "INT8", "u8": "INT8", "f64": "FP32"}


def base_name(device: str) -> str:
    """``"GPU.1"`` -> ``"GPU"``."""
    return device.split(".", 1)[0].strip().upper()


def parse_priorities(text: str) -> tuple[list[str], set[str]]:
    """``"GNA,CPU,-GPU"`` -> ``(["GNA", "CPU"], {"GPU"})``: devices in order, and the excluded ones."""
    named: list[str] = []
    excluded: set[str] = set()
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            continue
        if item.startswith("-"):
            if not item[1:].strip():
                raise DeviceError(f"MULTI_DEVICE_PRIORITIES {text!r}: '-' must be followed by a device name")
            excluded.add(item[1:].strip().upper())
        elif "(" in item:
            raise DeviceError(f"MULTI_DEVICE_PRIORITIES {text!r}: '{item}' is BATCH syntax; AUTO and MULTI take "
                              "device names, e.g. 'GNA,CPU'")
        elif item.upper() not in named:
            named.append(item.upper())
    return named, excluded


def _rank(services: Any, device: str) -> int:
    base = base_name(device)
    if base == "CPU":
        return 3
    if base == "GPU":
        try:
            kind = services.get_property(device, "DEVICE_TYPE")
        except Exception:  # noqa: BLE001 - a device that cannot say counts as integrated
            kind = device_props.Type.INTEGRATED
        return 0 if kind == device_props.Type.DISCRETE else 1
    return 2


def candidate_devices(services: Any, priorities: str, owner: str = "AUTO") -> list[str]:
    """The devices ``owner`` may use, best first (see the module docstring)."""
    named, excluded = parse_priorities(priorities)
    for name in named:
        if base_name(name) in VIRTUAL:
            raise DeviceError(f"{owner}: '{name}' is a virtual device and cannot be a candidate of {owner}")
        services.plugin(name)  # an unknown device raises DeviceError naming the registered ones
    if named:
        devices = named
    else:
        available = [d for d in services.available_devices
                     if base_name(d) not in VIRTUAL and base_name(d) not in ONLY_WHEN_NAMED]
        devices = sorted(available, key=lambda d: _rank(services, d))  # stable: registry order within a rank
    devices = [d for d in devices if d not in excluded and base_name(d) not in excluded]
    if not devices:
        raise DeviceError(f"{owner} has no device to use: priorities {priorities!r} leave none "
                          f"(available: {', '.join(services.available_devices)})")
    return devices


def model_precision(model: Model) -> str:
    """The model's compute precision as an ``OPTIMIZATION_CAPABILITIES`` entry: INT8 for quantized models,
    else the element type of the first weighted op's weights, else of the first floating-point input."""
    ops = model.get_ordered_ops()
    if any(n.type_name in _QUANTIZED for n in ops):
        return "INT8"
    for node in ops:
        if node.type_name in _WEIGHTED and node.get_input_size() > 1:
            name = node.input_value(1).get_element_type().get_type_name()
            if name in _PRECISION:
                return _PRECISION[name]
    for port in model.inputs:
        name = port.get_element_type().get_type_name()
        if name in ("f32", "f16", "bf16"):
            return _PRECISION[name]
    return "FP32"


def _accepts(capabilities: list[str], precision: str) -> bool:
    # FP16/BF16/INT8 models run (converted) on an FP32 device; an FP32 model needs FP32
    return precision in capabilities or ("FP32" in capabilities and precision in ("FP16", "BF16", "INT8"))


def why_not(services: Any, model: Model, device: str, precision: str) -> str | None:
    """``None`` if ``device`` can run ``model``, else the reason it cannot."""
    plugin = services.plugin(device)
    if "OPTIMIZATION_CAPABILITIES" in plugin.supported_properties():
        caps = [str(c) for c in services.get_property(device, "OPTIMIZATION_CAPABILITIES")]
        if caps and not _accepts(caps, precision):
            return f"the model is {precision} and {device} supports {', '.join(caps)}"
    try:
        supported = services.query_model(model, device)
    except Exception as e:  # noqa: BLE001 - a device that cannot answer is not capable
        return f"query_model failed: {type(e).__name__}: {e}"
    missing = [n.friendly_name for n in model.get_ordered_ops() if n.friendly_name not in supported]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        return f"{device} does not support {len(missing)} node(s): {shown}"
    return None


def capable_devices(services: Any, model: Model, devices: list[str], owner: str = "AUTO") -> list[str]:
    """The devices of ``devices`` that can run ``model``, in order; DeviceError (with every reason) if none."""
    precision = model_precision(model)
    reasons = {d: why_not(services, model, d, precision) for d in devices}
    ok = [d for d in devices if reasons[d] is None]
    if not ok:
        detail = "; ".join(f"{d}: {r}" for d, r in reasons.items())
        raise DeviceError(f"{owner}: no candidate device can run model '{model.friendly_name}' ({detail})")
    return ok
