"""GNA compiled model and infer request.

Compile = the per-target limits check (:mod:`.limits`), the cycle estimate (:mod:`.cost_model`)
and the execution path of the mode: ``GNA_SW_FP32`` runs the graph in float with the reference
interpreter; the other modes run the bit-exact integer path (:mod:`.exact`; what it covers is listed there).
``GNA_DEVICE_MODE``, ``PERFORMANCE_HINT`` and ``LOG_LEVEL`` can change after compilation; the rest
is read-only. ``export_graph`` attaches a :class:`~.blob_record.CompileRecord` to the exported graph;
an imported model is rebuilt from it (its compile keys, input scales and settled requantizations) and
checked against its fingerprint, so it computes bit for bit what the exported model did.

>>> compiled = GNACompiledModel(model, {"GNA_DEVICE_MODE": "GNA_SW_FP32"})    # doctest: +SKIP
>>> compiled.create_sync_infer_request().infer([x])                         # doctest: +SKIP
"""

from __future__ import annotations

import enum
import logging
from dataclasses import replace
from typing import Any, Protocol

from vinerun.errors import BlobError
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.property_table import PropertyValues, plain_value
from vinerun.plugin_api.variable_state import VariableState, variable_states
from vinerun.plugins.gna import blob_record
from vinerun.plugins.gna import config as cfgmod
from vinerun.plugins.gna.blob_record import CompileRecord
from vinerun.plugins.gna.compatibility import check_compatibility
from vinerun.plugins.gna.config import (
    COMPILE_KEYS,
    COMPILED_TABLE,
    MODE,
    MUTABLE_AFTER_COMPILE,
    PLUGIN_TABLE,
    SCALE_KEYS,
    GNAConfig,
    execution_devices,
    resolve,
)
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


def exact_backend(model: Model, config: GNAConfig, overrides: dict[str, float] | None = None) -> ExactBackend:
    """The bit-exact integer path; raises NotSupportedError naming what it does not cover yet."""
    return ExactBackend(model, config, overrides)


def check_targets(config: GNAConfig) -> str:
    """The compatibility table (:mod:`.compatibility`): a newer compile target never runs on an older
    execution target; an older one runs ("Partially", with a warning)."""
    return check_compatibility(config.compile_target, config.execution_target)


class GNACompiledModel(ICompiledModel):
    """A model checked against the compile target's limits, with the backend of its execution mode."""

    def __init__(self, model: Model, config: PropertyValues | dict[str, Any], record: CompileRecord | None = None):
        """``record``: an imported blob's compile record; its compile keys and input scales replace the
        configuration's (see :mod:`.blob_record`)."""
        super().__init__(model.clone(), "GNA")
        for node in self.model.get_ordered_ops():
            # auto names (MatMul_12) change with every clone; the exact path keys requantizations by name and
            # an exported graph must carry the same ones
            node.set_friendly_name(node.get_friendly_name())
        if not isinstance(config, PropertyValues):
            values = PropertyValues(PLUGIN_TABLE)
            cfgmod.apply_config(values, config)
            config = values
        self.imported = record
        if record is not None:
            config = config.copy()
            apply_record(config, record)
        self.gna = resolve(config)
        if record is not None:
            if len(record.input_scales) != len(self.model.get_parameters()):
                raise BlobError(f"GNA blob: its record has {len(record.input_scales)} input scale factors for "
                                f"{len(self.model.get_parameters())} inputs")
            self.gna = replace(self.gna, scale_factors={}, scale_factors_by_index=dict(enumerate(record.input_scales)))
        check_targets(self.gna)
        check_model(self.model, self.gna.compile_target, self.gna.precision)
        self.estimate: CycleEstimate = estimate_cycles(self.model, self.gna.compile_target, self.gna.precision)
        self.stateful = bool(self.model.get_variables())
        #: the read-write values it was compiled with (the blob header's config; see ``config``)
        self.base_config: dict[str, Any] = {k: config.get(k) for k in config.values
                                            if PLUGIN_TABLE.supported().get(k) == "RW"}
        # a blob records the resolved targets: importing it elsewhere is checked against the table
        self.base_config[cfgmod.EXEC_TARGET] = self.gna.execution_target
        self.base_config[cfgmod.COMPILE_TARGET] = self.gna.compile_target
        # and its mode, so that an importing Core's own GNA_DEVICE_MODE does not switch it (an import call's does)
        self.base_config[MODE] = self.gna.mode
        #: what the record of an exported blob says about the compile keys
        self.compile_config = record.config if record is not None else compile_keys(config, self.gna)
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
        self._exact: ExactBackend | None = None
        self.backend = self._backend(self.gna.mode)

    @property
    def mode(self) -> ExecutionMode:
        return self.properties.get(MODE)

    @property
    def config(self) -> dict[str, Any]:
        """The read-write values it was compiled with, and the current values of those changed since
        (``GNA_DEVICE_MODE``...): what ``export_model`` stores in the blob header."""
        now = {k: self.properties.get(k) for k in MUTABLE_AFTER_COMPILE if self.properties.is_set(k)}
        return {**self.base_config, **now}

    def _backend(self, mode: ExecutionMode) -> Backend:
        if mode == ExecutionMode.SW_FP32:
            return FloatBackend(self.model)
        if mode in (ExecutionMode.HW, ExecutionMode.HW_WITH_SW_FBACK):
            log.info("GNA: no GNA hardware; %s runs the bit-exact software path (GNA_SW_EXACT)", mode.name)
        return self.exact()

    def exact(self) -> ExactBackend:
        """The integer pipeline, compiled once (on first use); an imported model's starts from the blob's
        requantizations and must reproduce its fingerprint."""
        if self._exact is None:
            record = self.imported
            backend = exact_backend(self.model, self.gna, record.overrides if record else None)
            if record is not None and record.fingerprint and backend.fingerprint() != record.fingerprint:
                raise BlobError(f"GNA blob of '{self.model.friendly_name}': the imported model's quantization "
                                "does not reproduce the exported one (fingerprint mismatch); export it again")
            self._exact = backend
        return self._exact

    def export_graph(self) -> Model:
        """The graph with its :class:`~.blob_record.CompileRecord` in the model rt_info."""
        return blob_record.attach(self.model, self.record())

    def record(self) -> CompileRecord:
        """What a blob must carry so that an imported model computes exactly what this one does."""
        exact = self._exact
        if exact is None and self.imported is not None:
            return self.imported
        params = self.model.get_parameters()
        scales = [self.gna.input_scale_factor(i, [p.friendly_name, *p.output(0).get_names()])
                  for i, p in enumerate(params)]
        if exact is None:
            return CompileRecord(dict(self.compile_config), scales)
        scales = [s for _, s in exact.input_keys]  # what the inputs were quantized with (FakeQuantize's, if any)
        return CompileRecord(dict(self.compile_config), scales, dict(exact.overrides), dict(exact.state_scales),
                             [s for _, s, _ in exact.outputs], exact.fingerprint())

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


def compile_keys(values: PropertyValues, gna: GNAConfig) -> dict[str, Any]:
    """The keys that change compilation, as plain values: every compile key (set or default; the compile
    target resolved) and the scale-factor keys that were given."""
    out = {k: plain_value(values.get(k)) for k in COMPILE_KEYS}
    out[cfgmod.COMPILE_TARGET] = plain_value(gna.compile_target)
    out.update({k: plain_value(values.get(k)) for k in SCALE_KEYS if values.is_set(k)})
    return out


def apply_record(values: PropertyValues, record: CompileRecord) -> None:
    """Replace the compile keys of ``values`` (the importing plugin's and the import call's) by the blob's.
    Values asked for that differ from the blob's are ignored with a warning, as the Intel plugin ignored
    custom scale factors for blobs of version >= 2.8: the blob was quantized with its own."""
    wanted = values.table.convert_all(record.config)
    for key in [*COMPILE_KEYS, *SCALE_KEYS]:
        if values.is_set(key) and (key not in wanted or values.get(key) != wanted[key]):
            log.warning("GNA: %s=%s is ignored for an imported model: the blob was compiled with %s", key,
                        _shown(values.get(key)), _shown(wanted[key]) if key in wanted else "none given")
        if key not in wanted:
            values.values.pop(key, None)
            values.explicit.discard(key)
    values.set(wanted)


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


def _shown(value: Any) -> str:
    """A property value as a log line shows it: enums by name, element types by name."""
    if isinstance(value, enum.Enum):
        return value.name
    if hasattr(value, "get_type_name"):
        return str(value.get_type_name())
    return str(value)
