"""The ``AUTO`` and ``MULTI`` devices: pick capable real devices and compile there through the Core.

AUTO (default hint LATENCY) runs each model on one target, the best capable candidate, with the CPU
start-up helper while the target compiles (``ENABLE_STARTUP_FALLBACK``; skipped when the target's blob
is in ``CACHE_DIR``, for stateful models, and when CPU is not a candidate). With the hint
CUMULATIVE_THROUGHPUT it uses every capable candidate at once; MULTI is AUTO with that hint.

``MODEL_PRIORITY``: a model does not take a device that a live model of higher priority compiled by
the same plugin runs on while another capable device is free (that device moves to the end of its list).
"""

from __future__ import annotations

import weakref
from typing import Any

from vinerun.errors import PropertyError
from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugin_api.property_table import PropertyTable, PropertyValues
from vinerun.properties.hint import PerformanceMode
from vinerun.virtual.auto import config as cfg
from vinerun.virtual.auto.candidates import candidate_devices, capable_devices
from vinerun.virtual.auto.compiled_model import AutoCompiledModel
from vinerun.virtual.forwarding import device_keys, with_device_properties

#: the compile keys AUTO itself handles and passes on only as below
_OWN = {cfg.PRIORITIES, "ENABLE_STARTUP_FALLBACK", "ENABLE_RUNTIME_FALLBACK", "SCHEDULE_POLICY", "CACHE_DIR"}
_PASSED_WHEN_SET = ("PERF_COUNT", "PERFORMANCE_HINT_NUM_REQUESTS", "LOG_LEVEL", "MODEL_PRIORITY")


class AutoPlugin(IPlugin):
    """The ``AUTO`` device.

    >>> core.compile_model(model, "AUTO:GNA,CPU").get_property("EXECUTION_DEVICES")   # doctest: +SKIP
    ['(CPU)']
    >>> core.compile_model(model, "AUTO:-GNA", {"PERFORMANCE_HINT": "CUMULATIVE_THROUGHPUT"})  # doctest: +SKIP
    """

    device_name = "AUTO"
    full_name = "Auto device"
    default_hint = PerformanceMode.LATENCY
    #: MULTI uses every capable device whatever the hint (the hint then goes to the devices)
    always_cumulative = False
    #: the Core hands virtual devices the CACHE_DIR key instead of caching their compiled models
    virtual = True

    def __init__(self) -> None:
        self._table = cfg.plugin_table(self.device_name, self.full_name, self.default_hint)
        self._compiled_table = cfg.compiled_table(self._table, self.device_name)
        self._live: weakref.WeakSet[AutoCompiledModel] = weakref.WeakSet()
        super().__init__()

    def property_table(self) -> PropertyTable:
        return self._table

    # --- compile ------------------------------------------------------------------------------
    def _split(self, config: dict[str, Any]) -> tuple[PropertyValues, dict[str, Any]]:
        """The plugin's values updated by ``config``'s own keys, and the device keys to pass on."""
        own = {k: v for k, v in config.items() if k in self._table}
        values = self.compile_config(own)
        return values, {k: v for k, v in config.items() if k not in self._table}

    def _device_config(self, device: str, values: PropertyValues, passed: dict[str, Any]) -> dict[str, Any]:
        supported = self.core.plugin(device).supported_properties()
        out: dict[str, Any] = {}
        if supported.get(cfg.HINT) == "RW":
            mode = values.get(cfg.HINT)
            out[cfg.HINT] = PerformanceMode.THROUGHPUT if mode == PerformanceMode.CUMULATIVE_THROUGHPUT else mode
        for key in _PASSED_WHEN_SET:
            if values.is_set(key) and supported.get(key) == "RW":
                out[key] = values.get(key)
        out.update({k: v for k, v in passed.items() if supported.get(k) == "RW"})
        if values.get("CACHE_DIR"):
            out["CACHE_DIR"] = values.get("CACHE_DIR")
        return with_device_properties(out, passed)

    def _check_passed(self, passed: dict[str, Any], devices: list[str]) -> None:
        for key in device_keys(passed):
            if not any(self.core.plugin(d).supported_properties().get(key) == "RW" for d in devices):
                raise PropertyError(f"Unsupported property {key} by {self.device_name}: none of its devices "
                                    f"({', '.join(devices)}) supports it. {self.device_name}'s own properties: "
                                    f"{', '.join(sorted(self.supported_properties()))}")

    def _by_priority(self, devices: list[str], values: PropertyValues) -> list[str]:
        """Devices taken by live models of higher ``MODEL_PRIORITY`` go last (if another one is left)."""
        mine = values.get("MODEL_PRIORITY")
        taken = {m.devices[0] for m in list(self._live) if m.values.get("MODEL_PRIORITY") > mine}
        free = [d for d in devices if d not in taken]
        return free + [d for d in devices if d in taken] if free else devices

    def compile_model(self, model: Model, config: dict[str, Any]) -> AutoCompiledModel:
        values, passed = self._split(config)
        devices = candidate_devices(self.core, values.get(cfg.PRIORITIES), self.device_name)
        self._check_passed(passed, devices)
        devices = capable_devices(self.core, model, devices, self.device_name)
        devices = self._by_priority(devices, values)

        def compile_on(m: Model, device: str) -> ICompiledModel:
            return self.core.compile_model(m, device, self._device_config(device, values, passed))

        use_helper = bool(values.get("ENABLE_STARTUP_FALLBACK")) and not self._target_cached(
            model, devices, values, passed)
        cumulative = self.always_cumulative or values.get(cfg.HINT) == PerformanceMode.CUMULATIVE_THROUGHPUT
        compiled = AutoCompiledModel(self.device_name, model, values, self._compiled_table, devices, compile_on,
                                     use_helper, cumulative)
        self._live.add(compiled)
        return compiled

    def _target_cached(self, model: Model, devices: list[str], values: PropertyValues,
                       passed: dict[str, Any]) -> bool:
        """Whether the target's blob is in the model cache (then the CPU helper is not worth it)."""
        is_cached = getattr(self.core, "is_cached", None)
        if is_cached is None or devices[0] == "CPU":
            return False
        return bool(is_cached(model, devices[0], self._device_config(devices[0], values, passed)))

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        """Each node -> the first candidate that supports it."""
        values, _ = self._split(config)
        out: dict[str, str] = {}
        for device in candidate_devices(self.core, values.get(cfg.PRIORITIES), self.device_name):
            for name in self.core.query_model(model, device):
                out.setdefault(name, device)
        return out


class MultiPlugin(AutoPlugin):
    """The ``MULTI`` device: AUTO with CUMULATIVE_THROUGHPUT (every capable device at once). A LATENCY or
    THROUGHPUT hint is passed on to the devices; CUMULATIVE_THROUGHPUT reaches them as THROUGHPUT.

    >>> compiled = core.compile_model(model, "MULTI:CPU,GNA")                 # doctest: +SKIP
    >>> compiled.get_property("EXECUTION_DEVICES")                            # doctest: +SKIP
    ['CPU', 'GNA']
    """

    device_name = "MULTI"
    full_name = "MULTI device"
    default_hint = PerformanceMode.CUMULATIVE_THROUGHPUT
    always_cumulative = True
