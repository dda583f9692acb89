"""Automatic batching, as OpenVINO's Core applies it: a compile for a device that reports ``OPTIMAL_BATCH_SIZE``
(the GPU; not the CPU) with ``PERFORMANCE_HINT=THROUGHPUT`` goes through the ``BATCH`` device, which batches the
model by the device's ``OPTIMAL_BATCH_SIZE`` for it, or returns the device's own compiled model when that is 1 or
the model cannot be batched.

``ALLOW_AUTO_BATCHING=False`` turns it off, in the compile config or for the whole Core
(``core.set_property({"ALLOW_AUTO_BATCHING": False})``); so does ``EXCLUSIVE_ASYNC_REQUESTS=True``. The key is
the Core's: real devices never see it.

>>> compiled = core.compile_model(model, "GPU", {"PERFORMANCE_HINT": "THROUGHPUT"})    # doctest: +SKIP
>>> compiled.get_property("AUTO_BATCH_SIZE")                                          # doctest: +SKIP
8
"""

from __future__ import annotations

from typing import Any

ALLOW = "ALLOW_AUTO_BATCHING"
_THROUGHPUT = "THROUGHPUT"


def _mode(value: Any) -> str:
    return str(getattr(value, "name", value)).upper()


def take_allow(config: dict[str, Any], core_default: Any) -> bool:
    """Whether automatic batching is allowed: ``config``'s ``ALLOW_AUTO_BATCHING`` (removed from it), else the
    Core's value (on by default, as in OpenVINO)."""
    value = config.pop(ALLOW, core_default)
    return str(value).strip().upper() not in ("FALSE", "NO", "0", "OFF") if value is not None else True


def applies(plugin: Any, config: dict[str, Any]) -> bool:
    """Whether a compile of ``plugin`` with ``config`` (automatic batching allowed) goes through ``BATCH``."""
    supported = plugin.supported_properties()
    if "OPTIMAL_BATCH_SIZE" not in supported or str(config.get("EXCLUSIVE_ASYNC_REQUESTS", "")).upper() == "TRUE":
        return False
    hint = config.get("PERFORMANCE_HINT")
    if hint is None and "PERFORMANCE_HINT" in supported:
        hint = plugin.get_property("PERFORMANCE_HINT")
    return _mode(hint) in (_THROUGHPUT, "TPUT")
