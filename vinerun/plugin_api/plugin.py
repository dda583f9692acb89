"""``IPlugin``: a device. The runtime finds plugins through a registry, never by import."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from vinerun.errors import PropertyError
from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel


class IPlugin(ABC):
    """A device: compiles models, answers ``query_model`` and holds device-wide properties."""

    #: the device name users type, e.g. "CPU"
    device_name: str = ""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {}

    @abstractmethod
    def compile_model(self, model: Model, config: dict[str, Any]) -> ICompiledModel:
        """Compile ``model`` (the plugin may transform a clone of it) with per-call ``config``."""

    @abstractmethod
    def query_model(self, model: Model, config: dict[str, Any]) -> dict[str, str]:
        """``{node friendly name: device}`` for every node this device can run."""

    @abstractmethod
    def supported_properties(self) -> dict[str, str]:
        """``{key: "RO" | "RW"}``."""

    @abstractmethod
    def read_property(self, key: str) -> Any:
        """The value of a read-only or read-write device property."""

    def get_property(self, key: str) -> Any:
        if key == "SUPPORTED_PROPERTIES":
            return self.supported_properties()
        if key not in self.supported_properties():
            raise PropertyError(f"Unsupported property {key} by {self.device_name} plugin. "
                                f"Supported: {', '.join(sorted(self.supported_properties()))}")
        return self.read_property(key)

    def set_property(self, config: dict[str, Any]) -> None:
        supported = self.supported_properties()
        for k, v in config.items():
            if k not in supported:
                raise PropertyError(f"Unsupported property {k} by {self.device_name} plugin. "
                                    f"Supported: {', '.join(sorted(supported))}")
            if supported[k] != "RW":
                raise PropertyError(f"Property {k} of {self.device_name} is read-only")
            self.config[k] = self.check_property(k, v)

    def check_property(self, key: str, value: Any) -> Any:
        """Validate and normalize a property value (plugins override to check types/ranges)."""
        return value
