"""``IPlugin``: a device. The runtime finds plugins through a registry, never by import."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.property_table import PropertyTable, PropertyValues


class IPlugin(ABC):
    """A device: compiles models, answers ``query_model`` and holds device-wide properties.

    Properties come from one typed table (:meth:`property_table`): ``SUPPORTED_PROPERTIES``,
    validation, conversion and the errors are all derived from it.

    >>> class MyPlugin(IPlugin):
    ...     device_name = "MY"
    ...     def property_table(self): return PropertyTable("MY plugin", [Prop("PERF_COUNT", Bool(), False)])
    ...     def compile_model(self, model, config): ...
    ...     def query_model(self, model, config): ...
    """

    #: the device name users type, e.g. "CPU"
    device_name: str = ""
    #: set by the Core that uses this plugin: a ``runtime.core.CoreServices`` (compile on, query
    #: and read properties of other devices); what virtual devices build on
    core: Any = None

    def __init__(self) -> None:
        self.props = PropertyValues(self.property_table())

    def property_table(self) -> PropertyTable:
        """The device's properties; devices override (the default has none but SUPPORTED_PROPERTIES)."""
        return PropertyTable(f"{self.device_name} plugin", [])

    @property
    def config(self) -> dict[str, Any]:
        """The current value of every read-write property."""
        return {k: self.props.get(k) for k, m in self.supported_properties().items() if m == "RW"}

    def compile_config(self, config: dict[str, Any]) -> PropertyValues:
        """The plugin's values updated by a compile call's ``config`` (validated; the plugin is unchanged)."""
        values = self.props.copy()
        values.set(config)
        return values

    @abstractmethod
    def compile_model(self, model: Model, config: dict[str, Any]) -> ICompiledModel:
        """Compile ``model`` (the plugin may transform a clone of it) with per-call ``config``."""

    def import_model(self, model: Model, config: dict[str, Any]) -> ICompiledModel:
        """Rebuild a compiled model from the graph stored in an exported blob (``Core.import_model``,
        ``CACHE_DIR``). ``model`` is what the device's ``ICompiledModel.export_graph`` returned."""
        from vinerun.errors import NotSupportedError

        raise NotSupportedError(f"{self.device_name} plugin cannot import compiled models")

    def caching_properties(self) -> list[str]:
        """Properties whose values change compilation; the model cache key hashes their values
        (OpenVINO's ``CACHING_PROPERTIES``). Default: every read-write property but the runtime-only ones."""
        runtime_only = {"CACHE_DIR", "PERF_COUNT", "LOG_LEVEL", "NUM_STREAMS", "INFERENCE_NUM_THREADS",
                        "PERFORMANCE_HINT", "PERFORMANCE_HINT_NUM_REQUESTS"}
        return sorted(k for k, m in self.supported_properties().items() if m == "RW" and k not in runtime_only)

    @abstractmethod
    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        """``{node friendly name: device}`` for every node this device can run."""

    def supported_properties(self) -> dict[str, str]:
        """``{key: "RO" | "RW"}``."""
        return self.props.table.supported()

    def read_property(self, key: str) -> Any:
        """The value of a read-only or read-write device property."""
        return self.props.get(key)

    def get_property(self, key: str, options: dict[str, Any] | None = None) -> Any:
        """A property's value; ``options`` are the arguments a few properties take (``OPTIMAL_BATCH_SIZE`` with
        ``{"MODEL_PTR": model}``), ignored by properties that take none."""
        return self.read_property(str(key))

    def set_property(self, config: dict[str, Any]) -> None:
        """Validate every value first (unknown key, read-only key, bad value: nothing is changed), then set."""
        self.props.set(config)

    def check_property(self, key: str, value: Any) -> Any:
        """The typed value ``value`` converts to for ``key`` (errors name the key and the allowed values)."""
        return self.props.table.convert(key, value)
