"""The CPU plugin: properties (a typed table, :mod:`.config`), ``query_model`` and ``compile_model``."""

from __future__ import annotations

from typing import Any

from vinerun.ir.model import Model
from vinerun.plugin_api.plugin import IPlugin
from vinerun.plugin_api.property_table import PropertyTable
from vinerun.plugins.cpu.compiled_model import CPUCompiledModel
from vinerun.plugins.cpu.config import PLUGIN_TABLE


class CPUPlugin(IPlugin):
    """The ``CPU`` device.

    >>> plugin = CPUPlugin()
    >>> plugin.set_property({"PERFORMANCE_HINT": "THROUGHPUT"})
    >>> plugin.get_property("PERFORMANCE_HINT")
    <PerformanceMode.THROUGHPUT: 2>
    """

    device_name = "CPU"

    def property_table(self) -> PropertyTable:
        return PLUGIN_TABLE

    def compile_model(self, model: Model, config: dict[str, Any]) -> CPUCompiledModel:
        return CPUCompiledModel(model, self.compile_config(config))

    def import_model(self, model: Model, config: dict[str, Any]) -> CPUCompiledModel:
        """A blob stores the graph as compiled; the CPU device rebuilds its plan from it."""
        return self.compile_model(model, config)

    def caching_properties(self) -> list[str]:
        # kernels and layouts depend on the processor, as in OpenVINO's CPU plugin
        return sorted({*super().caching_properties(), "FULL_DEVICE_NAME"})

    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        return {n.friendly_name: "CPU" for n in model.get_ordered_ops()}
