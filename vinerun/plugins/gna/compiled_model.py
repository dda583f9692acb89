"""GNA compiled model and infer request.

Compile = the per-target limits check (:mod:`.limits`), the cycle estimate (:mod:`.cost_model`)
and the execution path of the mode: ``GNA_SW_FP32`` runs the graph in float with the reference
interpreter; the other modes run the bit-exact integer path (:mod:`.exact`; what it covers is listed there).
``GNA_DEVICE_MODE``, ``PERFORMANCE_HINT`` and ``LOG_LEVEL`` can change after compilation; the rest
is read-only.

>>> compiled = GNACompiledModel(model, {"GNA_DEVICE_MODE": "GNA_SW_FP32"})    # doctest: +SKIP
>>> compiled.create_sync_infer_request().infer([x])                         # doctest: +SKIP
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.property_table import PropertyValues
from vinerun.plugin_api.variable_state import VariableState, variable_states
from vinerun.plugins.gna import config as cfgmod
from vinerun.plugins.gna.compatibility import check_compatibility
from vinerun.plugins.gna.config import COMPILED_TABLE, MODE, PLUGIN_TABLE, GNAConfig, execution_devices, resolve
from vinerun.plugins.gna.cost_model import CycleEstimate, estimate_cycles
from vinerun.plugins.gna.exact import ExactBackend
from vinerun.plugins.gna.limits import check_model
from vinerun.properties.intel_gna import ExecutionMode

log = logging.getLogger("vinerun")

class Backend(Protocol):
    """An execution path: float reference or bit-exact integers."""

    def run(self, inputs: list[Any], state: dict[str, Any]) -> list[Any]: ...


class FloatBackend:
    """``GNA_SW_FP32``: the graph in float with exact activations (the accuracy reference)."""

    def __init__(self, model: Model):
        self.model = model

    def run(self, inputs: list[Any], state: dict[str, Any]) -> list[Any]:
        return run_reference(self.model, inputs, state)


def exact_backend(model: Model, config: GNAConfig) -> Backend:
    """The bit-exact integer path; raises NotSupportedError naming what it does not cover yet."""
    return ExactBackend(model, config)


def check_targets(config: GNAConfig) -> str:
    """The compatibility table (:mod:`.compatibility`): a newer compile target never runs on an older
    execution target; an older one runs ("Partially", with a warning)."""
    return check_compatibility(config.compile_target, config.execution_target)


class GNACompiledModel(ICompiledModel):
    """A model checked against the compile target's limits, with the backend of its execution mode."""

    def __init__(self, model: Model, config: PropertyValues | dict[str, Any]):
        super().__init__(model.clone(), "GNA")
        if not isinstance(config, PropertyValues):
            values = PropertyValues(PLUGIN_TABLE)
            cfgmod.apply_config(values, config)
            config = values
        self.gna = resolve(config)
        check_targets(self.gna)
        check_model(self.model, self.gna.compile_target, self.gna.precision)
        self.estimate: CycleEstimate = estimate_cycles(self.model, self.gna.compile_target, self.gna.precision)
        self.stateful = bool(self.model.get_variables())
        #: the read-write values it was compiled with (what export_model stores)
        self.config: dict[str, Any] = {k: config.get(k) for k in config.values
                                       if PLUGIN_TABLE.supported().get(k) == "RW"}
        # a blob records the resolved targets: importing it elsewhere is checked against the table
        self.config[cfgmod.EXEC_TARGET] = self.gna.execution_target
        self.config[cfgmod.COMPILE_TARGET] = self.gna.compile_target
        self.loaded_from_cache = False
        stored = {k: config.get(k) for k in COMPILED_TABLE.props if k in PLUGIN_TABLE.props}
        stored[cfgmod.EXEC_TARGET], stored[cfgmod.COMPILE_TARGET] = (self.gna.execution_target,
                                                                      self.gna.compile_target)
        if self.stateful:
            stored[cfgmod.NUM_REQUESTS] = 1  # forced to 1 with state layers
        self.properties = PropertyValues(COMPILED_TABLE, stored, computed={
            "NETWORK_NAME": lambda: self.model.friendly_name,
            "EXECUTION_DEVICES": lambda: execution_devices(self.mode),
            "LOADED_FROM_CACHE": lambda: self.loaded_from_cache,
        })
        self.backend = self._backend(self.gna.mode)

    @property
    def mode(self) -> ExecutionMode:
        return self.properties.get(MODE)

    def _backend(self, mode: ExecutionMode) -> Backend:
        if mode == ExecutionMode.SW_FP32:
            return FloatBackend(self.model)
        if mode in (ExecutionMode.HW, ExecutionMode.HW_WITH_SW_FBACK):
            log.info("GNA: no GNA hardware; %s runs the bit-exact software path (GNA_SW_EXACT)", mode.name)
        return exact_backend(self.model, self.gna)

    def create_sync_infer_request(self) -> GNAInferRequest:
        return GNAInferRequest(self)

    def get_property(self, key: str) -> Any:
        return self.properties.get(cfgmod.canonical_key(str(key)))

    def set_property(self, config: dict[str, Any]) -> None:
        """Only ``GNA_DEVICE_MODE``, ``PERFORMANCE_HINT`` and ``LOG_LEVEL`` change after compilation."""
        converted = COMPILED_TABLE.convert_all(cfgmod.canonical_config(config))
        if MODE in converted and converted[MODE] != self.mode:
            self.backend = self._backend(converted[MODE])
        self.properties.set(converted)


class GNAInferRequest(ISyncInferRequest):
    """Runs the compiled model's backend; keeps variable state and the estimated counters."""

    def __init__(self, compiled: GNACompiledModel):
        self.compiled = compiled
        self.state: dict[str, Any] = {}
        self._profile: list[ProfilingInfo] = []

    def infer(self, inputs: list[Any]) -> list[Any]:
        outs = self.compiled.backend.run(inputs, self.state)
        if self.compiled.properties.get("PERF_COUNT"):
            self._profile = self.compiled.estimate.profiling_info()
        return outs

    def get_profiling_info(self) -> list[ProfilingInfo]:
        return list(self._profile)

    def query_state(self) -> list[VariableState]:
        return variable_states(self.compiled.model, self.state)
