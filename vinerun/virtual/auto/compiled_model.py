"""``AutoCompiledModel``: a model compiled by AUTO or MULTI on one or more real devices.

It owns the devices' compiled models (through its :mod:`.schedule`), counts who answered, and says
so: ``EXECUTION_DEVICES`` (``["(CPU)"]`` while the start-up helper serves), ``AUTO_OUTPUTS_FROM_HELPER``
and ``EXECUTED_REQUESTS_PER_DEVICE``. The first output the helper gives is logged as a warning, the
handover to the target as info, on the ``"vinerun"`` logger.

>>> compiled = core.compile_model(model, "AUTO:GNA,CPU")                  # doctest: +SKIP
>>> compiled.get_property("EXECUTION_DEVICES")                            # doctest: +SKIP
['(CPU)']
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from vinerun.errors import NotSupportedError
from vinerun.ir.model import Model
from vinerun.plugin_api.async_infer_request import IAsyncInferRequest
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest
from vinerun.plugin_api.property_table import PropertyTable, PropertyValues
from vinerun.virtual.auto import config as cfg
from vinerun.virtual.auto.requests import AutoAsyncInferRequest, AutoInferRequest
from vinerun.virtual.auto.schedule import Cumulative, Schedule, Startup

log = logging.getLogger("vinerun")


class AutoCompiledModel(ICompiledModel):
    """The virtual compiled model; ``devices`` are the capable candidates, best first; ``cumulative``: run on
    all of them at once (MULTI, CUMULATIVE_THROUGHPUT), else on one with the optional CPU helper."""

    def __init__(self, name: str, model: Model, values: PropertyValues, table: PropertyTable,
                 devices: list[str], compile_on: Callable[[Model, str], ICompiledModel],
                 use_helper: bool, cumulative: bool):
        super().__init__(model.clone(), name)
        self.values = values
        self.devices = list(devices)
        self.stateful = bool(self.model.get_variables())
        self.runtime_fallback = bool(values.get("ENABLE_RUNTIME_FALLBACK")) and not self.stateful
        self._compile_on = compile_on
        self._lock = threading.Lock()
        self._extra: dict[str, ICompiledModel] = {}  # devices compiled later, for runtime fallback
        self.counts: Counter[str] = Counter()
        self.helper_outputs = 0
        self.properties = PropertyValues(table, {k: values.get(k) for k in table.props if k in values.table},
                                         computed={
            "NETWORK_NAME": lambda: self.model.friendly_name,
            "OPTIMAL_NUMBER_OF_INFER_REQUESTS": lambda: self.schedule.optimal_requests(),
            "EXECUTION_DEVICES": lambda: self.schedule.execution_devices(),
            cfg.OUTPUTS_FROM_HELPER: lambda: self.helper_outputs,
            cfg.EXECUTED_REQUESTS: lambda: dict(self.counts),
        })
        build = lambda device: compile_on(self.model, device)  # noqa: E731
        self.schedule: Schedule
        if cumulative:
            self.schedule = Cumulative(name, build, self.devices, values.get("SCHEDULE_POLICY"))
            self.counts.update(dict.fromkeys(self.schedule.models, 0))  # every device listed, 0 included
        else:
            self.schedule = Startup(name, build, self.devices, use_helper and not self.stateful)

    # --- devices ------------------------------------------------------------------------------
    def current_device(self) -> str:
        """The device new inferences go to (AUTO), or the first device (MULTI)."""
        return getattr(self.schedule, "current", None) or next(iter(self.schedule.models))

    def is_helper(self, device: str) -> bool:
        startup = self.schedule
        return isinstance(startup, Startup) and startup.helper == device and not startup.target_ready.is_set()

    def device_model(self, device: str) -> ICompiledModel:
        """The model compiled for ``device`` (compiled now when only runtime fallback needs it)."""
        model = self.schedule.models.get(device) or self._extra.get(device)
        if model is not None:
            return model
        with self._lock:
            if device not in self._extra:
                log.info("%s: compiling on %s for runtime fallback", self.device_name, device)
                self._extra[device] = self._compile_on(self.model, device)
            return self._extra[device]

    def fallback_devices(self, device: str) -> list[str]:
        """Where an inference that failed on ``device`` runs next: the later candidates, then (MULTI) the
        earlier ones; none for stateful models or with ``ENABLE_RUNTIME_FALLBACK`` off."""
        if not self.runtime_fallback or device not in self.devices:
            return []
        i = self.devices.index(device)
        later = self.devices[i + 1:]
        if isinstance(self.schedule, Cumulative):
            later += [d for d in self.devices[:i] if d in self.schedule.models]
        pending = self.schedule.pending_devices()
        return [d for d in later if d not in pending]

    def wait_for_target(self, timeout_s: float | None = None) -> bool:
        """Whether the start-up compile on the target finished (within ``timeout_s``); MULTI: True."""
        return self.schedule.target_ready.wait(timeout_s) if isinstance(self.schedule, Startup) else True

    def record(self, device: str, from_helper: bool) -> None:
        """Count one successful inference; the first one the helper answers is logged as a warning."""
        with self._lock:
            self.counts[device] += 1
            if from_helper:
                self.helper_outputs += 1
                first = self.helper_outputs == 1
            else:
                first = False
        if first:
            log.warning("%s: outputs of model '%s' come from the CPU start-up helper while %s compiles; they may "
                        "differ slightly from the target's (property %s counts them)", self.device_name,
                        self.model.friendly_name, ", ".join(d for d in self.devices if d != device),
                        cfg.OUTPUTS_FROM_HELPER)

    # --- ICompiledModel -----------------------------------------------------------------------
    def create_sync_infer_request(self) -> ISyncInferRequest:
        return AutoInferRequest(self)

    def create_async_infer_request(self, sync: ISyncInferRequest) -> IAsyncInferRequest:
        if not isinstance(sync, AutoInferRequest):
            raise TypeError(f"{self.device_name} compiled models drive their own requests, got {type(sync).__name__}")
        return AutoAsyncInferRequest(sync)

    def get_property(self, key: str) -> Any:
        return self.properties.get(str(key))

    def export_graph(self) -> Model:
        raise NotSupportedError(f"{self.device_name} compiled models cannot be exported: compile the model for the "
                                f"device itself (e.g. '{self.current_device()}') and export that")

    def get_runtime_model(self) -> Model:
        """The executed graph of the device new inferences go to."""
        return self.device_model(self.current_device()).get_runtime_model()
