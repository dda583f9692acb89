"""A test-only device plugin for the virtual-device tests (AUTO, MULTI, HETERO, BATCH).

It runs models with the NumPy reference interpreter behind the real plugin API, and can be told to
support only some op types, to compile slowly (a delay or a gate the test opens), to fail compiling,
or to fail some inferences. It is registered only in tests, through ``Core.register_plugin``; the
product never sees it.

Stable API (other test modules rely on it):

- ``FakeDevice(name="FAKE", ops=None, precisions=("FP32", "FP16", "INT8"), device_type="DISCRETE",
  optimal_requests=1, compile_delay_s=0.0, compile_gate=None, compile_error=None, infer_failures=0)``
  - ``ops``: op type names it supports (``query_model`` reports only these; ``compile_model`` raises
    ``UnsupportedOpError`` for others). ``None`` = every op.
  - ``precisions``: its ``OPTIMIZATION_CAPABILITIES``. ``device_type``: its ``DEVICE_TYPE``
    (``"DISCRETE"`` or ``"INTEGRATED"``).
  - ``compile_gate``: a ``threading.Event``; ``compile_model`` blocks until it is set (deterministic
    "slow compile"). ``compile_delay_s`` sleeps instead/as well.
  - ``compile_error``: an exception ``compile_model`` raises.
  - ``infer_failures``: the next N inferences raise ``InferenceError`` (-1: every inference).
  - ``infer_gate``: a ``threading.Event``; every inference waits until it is set (a device kept busy).
- Counters: ``compile_count``, ``infer_count`` (successful inferences), ``compile_started`` (an Event
  set when a compile begins); ``compiled`` lists its ``FakeCompiledModel`` objects; ``last_config`` is
  the config of the latest compile.
- ``register(core, name="FAKE", **kwargs) -> FakeDevice``: make one and register it on ``core``.

>>> core = ov.Core()
>>> slow = register(core, "SLOW", compile_gate=threading.Event())
>>> core.query_model(model, "SLOW")
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from vinerun.errors import InferenceError, UnsupportedOpError
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.plugin_api import ICompiledModel, IPlugin, ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.property_kinds import Bool, EnumOf, Int, Str
from vinerun.plugin_api.property_table import Prop, PropertyTable, PropertyValues
from vinerun.plugin_api.variable_state import VariableState, variable_states
from vinerun.properties import device as device_props
from vinerun.properties import hint

_STRUCTURAL = {"Parameter", "Result", "Constant"}


class FakeDevice(IPlugin):
    """A configurable test device; see the module docstring for every knob."""

    def __init__(self, name: str = "FAKE", ops: Iterable[str] | None = None,
                 precisions: Iterable[str] = ("FP32", "FP16", "INT8"), device_type: str = "DISCRETE",
                 optimal_requests: int = 1, compile_delay_s: float = 0.0,
                 compile_gate: threading.Event | None = None, compile_error: BaseException | None = None,
                 infer_failures: int = 0, infer_gate: threading.Event | None = None):
        self.device_name = name.upper()
        self.ops = None if ops is None else set(ops) | _STRUCTURAL
        self.precisions = list(precisions)
        self.device_type = device_props.Type[device_type]
        self.optimal_requests = optimal_requests
        self.compile_delay_s = compile_delay_s
        self.compile_gate = compile_gate
        self.compile_error = compile_error
        self.infer_failures = infer_failures
        self.infer_gate = infer_gate
        self.compile_count = 0
        self.infer_count = 0
        self.compile_started = threading.Event()
        self.compiled: list[FakeCompiledModel] = []
        self.last_config: dict[str, Any] = {}
        self._lock = threading.Lock()
        super().__init__()

    def property_table(self) -> PropertyTable:
        return PropertyTable(f"{self.device_name} plugin", [
            Prop("AVAILABLE_DEVICES", default=lambda: [""], mutability="RO"),
            Prop("FULL_DEVICE_NAME", default=f"Test-only device {self.device_name}", mutability="RO"),
            Prop("DEVICE_TYPE", default=lambda: self.device_type, mutability="RO"),
            Prop("OPTIMIZATION_CAPABILITIES", default=lambda: list(self.precisions), mutability="RO"),
            Prop("PERFORMANCE_HINT", EnumOf(hint.PerformanceMode), hint.PerformanceMode.LATENCY),
            Prop("PERF_COUNT", Bool(), False),
            Prop("NUM_STREAMS", Int(1), 1),
            Prop("CACHE_DIR", Str(), ""),
        ])

    # --- compile ------------------------------------------------------------------------------
    def compile_model(self, model: Model, config: dict[str, Any]) -> FakeCompiledModel:
        values = self.compile_config(config)
        self.last_config = dict(config)
        self.compile_started.set()
        if self.compile_gate is not None:
            self.compile_gate.wait()
        if self.compile_delay_s:
            time.sleep(self.compile_delay_s)
        if self.compile_error is not None:
            raise self.compile_error
        unsupported = sorted({n.type_name for n in model.get_ordered_ops()} - self.ops) if self.ops else []
        if unsupported:
            raise UnsupportedOpError(f"{self.device_name} cannot run ops of type {', '.join(unsupported)}")
        compiled = FakeCompiledModel(self, model, values)
        with self._lock:
            self.compile_count += 1
            self.compiled.append(compiled)
        return compiled

    def import_model(self, model: Model, config: dict[str, Any]) -> FakeCompiledModel:
        return self.compile_model(model, config)

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        return {n.friendly_name: self.device_name for n in model.get_ordered_ops()
                if self.ops is None or n.type_name in self.ops}

    # --- inference bookkeeping (called by requests) -------------------------------------------
    def _before_infer(self) -> None:
        if self.infer_gate is not None:
            self.infer_gate.wait()
        with self._lock:
            if self.infer_failures == 0:
                return
            if self.infer_failures > 0:
                self.infer_failures -= 1
        raise InferenceError(f"{self.device_name}: injected inference failure")

    def _after_infer(self) -> None:
        with self._lock:
            self.infer_count += 1


class FakeCompiledModel(ICompiledModel):
    """A model compiled for a :class:`FakeDevice`: the reference interpreter runs it."""

    def __init__(self, plugin: FakeDevice, model: Model, values: PropertyValues):
        super().__init__(model.clone(), plugin.device_name)
        self.plugin = plugin
        self.values = values
        self.config = {k: values.get(k) for k in values.values}

    def create_sync_infer_request(self) -> FakeInferRequest:
        return FakeInferRequest(self)

    def get_property(self, key: str) -> Any:
        key = str(key)
        facts = {"OPTIMAL_NUMBER_OF_INFER_REQUESTS": self.plugin.optimal_requests,
                 "EXECUTION_DEVICES": [self.device_name], "NETWORK_NAME": self.model.friendly_name,
                 "PERFORMANCE_HINT": self.values.get("PERFORMANCE_HINT"),
                 "PERF_COUNT": self.values.get("PERF_COUNT")}
        if key == "SUPPORTED_PROPERTIES":
            return {k: "RO" for k in (*facts, "SUPPORTED_PROPERTIES")}
        if key not in facts:
            from vinerun.errors import PropertyError

            raise PropertyError(f"Unsupported property {key} by {self.device_name} compiled model")
        return facts[key]


class FakeInferRequest(ISyncInferRequest):
    """Runs the reference interpreter; keeps variable state; profiling names the device."""

    def __init__(self, compiled: FakeCompiledModel):
        self.compiled = compiled
        self.state: dict[str, Any] = {}
        self._profile: list[ProfilingInfo] = []

    def infer(self, inputs: list[Any]) -> list[Any]:
        plugin = self.compiled.plugin
        plugin._before_infer()
        outs = run_reference(self.compiled.model, inputs, self.state)
        plugin._after_infer()
        if self.compiled.values.get("PERF_COUNT"):
            self._profile = [ProfilingInfo(n.friendly_name, n.type_name, f"ref_{plugin.device_name}", "EXECUTED",
                                           real_time=timedelta(microseconds=1))
                             for n in self.compiled.model.get_ordered_ops()]
        return outs

    def get_profiling_info(self) -> list[ProfilingInfo]:
        return list(self._profile)

    def query_state(self) -> list[VariableState]:
        return variable_states(self.compiled.model, self.state)


def register(core: Any, name: str = "FAKE", **kwargs: Any) -> FakeDevice:
    """A :class:`FakeDevice` registered on ``core`` under ``name``."""
    plugin = FakeDevice(name, **kwargs)
    core.register_plugin(plugin, plugin.device_name)
    return plugin
