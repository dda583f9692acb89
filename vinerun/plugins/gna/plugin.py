"""The GNA plugin: properties (:mod:`.config`), ``query_model`` and ``compile_model``."""

from __future__ import annotations

from typing import Any

from vinerun.ir.model import Model
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugin_api.property_table import PropertyTable, PropertyValues
from vinerun.plugins.gna import config as cfgmod
from vinerun.plugins.gna.blob_record import detach
from vinerun.plugins.gna.compiled_model import GNACompiledModel
from vinerun.plugins.gna.coverage import supported_nodes
from vinerun.properties.intel_gna import ExecutionMode


class GNAPlugin(IPlugin):
    """The ``GNA`` device: software emulation of Intel's GNA, always available.

    >>> plugin = GNAPlugin()
    >>> plugin.set_property({"GNA_DEVICE_MODE": "GNA_SW_FP32"})
    >>> plugin.get_property("GNA_DEVICE_MODE"), plugin.get_property("GNA_HW_EXECUTION_TARGET")
    (<ExecutionMode.SW_FP32: 4>, <HWGeneration.GNA_3_5: 3>)
    """

    device_name = "GNA"

    def property_table(self) -> PropertyTable:
        return cfgmod.PLUGIN_TABLE

    def set_property(self, config: dict[str, Any]) -> None:
        cfgmod.apply_config(self.props, config)

    def compile_config(self, config: dict[str, Any]) -> PropertyValues:
        values = self.props.copy()
        cfgmod.apply_config(values, config)
        return values

    def read_property(self, key: str) -> Any:
        return cfgmod.read(self.props, key)

    def check_property(self, key: str, value: Any) -> Any:
        key = str(key)
        return next(iter(self.props.table.convert_all(cfgmod.canonical_config({key: value})).values()))

    def compile_model(self, model: Model, config: dict[str, Any]) -> GNACompiledModel:
        return GNACompiledModel(model, self.compile_config(config))

    def import_model(self, model: Model, config: dict[str, Any]) -> GNACompiledModel:
        """A blob stores the graph, the config and the compile record (:mod:`.blob_record`): the model is
        rebuilt with the blob's compile keys, input scales and requantizations, and checked against its
        fingerprint; ``config`` (the blob header's, updated by the import call's) sets the runtime keys."""
        record = detach(model)
        return GNACompiledModel(model, self.compile_config(config), record=record)

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        """Nodes GNA compiles in the configured mode: GNA layers with static shapes, and in the exact modes
        only those the integer path covers (:func:`.coverage.supported_nodes`); the per-target shape
        limits are checked by ``compile_model``."""
        exact = cfgmod.resolve(self.compile_config(config)).mode != ExecutionMode.SW_FP32
        return {name: "GNA" for name in supported_nodes(model, exact)}
