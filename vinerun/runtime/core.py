"""``Core``: reads models, knows the devices, compiles."""

from __future__ import annotations

import os
from typing import Any

from vinerun.errors import DeviceError, PropertyError
from vinerun.ir.model import Model
from vinerun.runtime.compiled_model import CompiledModel
from vinerun.runtime.model_io import read_model as _read_model
from vinerun.runtime.registry import PluginRegistry


def normalize_config(config: Any) -> dict[str, Any]:
    """Config dicts take keys as strings or property keys, and values as Python or enum values."""
    if config is None:
        return {}
    if isinstance(config, tuple) and len(config) == 2:
        config = dict([config])
    if isinstance(config, (list, set)):
        config = dict(config)
    if not isinstance(config, dict):
        raise PropertyError(f"config must be a dict of property keys to values, not {type(config).__name__}")
    out = {}
    for k, v in config.items():
        out[str(k)] = v
    return out


def split_device(device_name: str) -> str:
    """``"CPU.0"`` -> ``"CPU"`` (one CPU device)."""
    base = device_name.strip()
    if "." in base and base.split(".", 1)[1].isdigit():
        base = base.split(".", 1)[0]
    return base


class Core:
    """Entry point of the runtime.

    >>> core = Core()
    >>> model = core.read_model("model.onnx")
    >>> compiled = core.compile_model(model, "CPU")
    """

    def __init__(self, xml_config_file: str = ""):
        self._registry = PluginRegistry()
        self._global: dict[str, Any] = {}

    @property
    def available_devices(self) -> list[str]:
        out = []
        for name in self._registry.names():
            try:
                plugin = self._registry.get(name)
            except Exception:  # noqa: BLE001 - a broken third-party plugin must not hide the others
                continue
            try:
                ids = plugin.get_property("AVAILABLE_DEVICES")
            except Exception:  # noqa: BLE001
                ids = [""]
            out.extend(name if not i or len(ids) == 1 else f"{name}.{i}" for i in ids)
        return out

    def get_available_devices(self) -> list[str]:
        return self.available_devices

    def _plugin(self, device_name: str) -> Any:
        if not isinstance(device_name, str) or not device_name.strip():
            raise DeviceError(f"Device name must be a non-empty string, got {device_name!r}")
        return self._registry.get(split_device(device_name))

    def read_model(self, model: Any, weights: Any = None, config: dict[str, Any] | None = None) -> Model:
        """Read ONNX or OpenVINO IR from a path, ``Path``, bytes or a file object."""
        if isinstance(model, Model):
            return model
        return _read_model(model, weights)

    def compile_model(self, model: Any, device_name: str | None = None, config: Any = None) -> CompiledModel:
        """Compile a Model (or a model path) for ``device_name`` (default CPU until AUTO exists)."""
        if not isinstance(model, Model):
            model = self.read_model(model)
        device = device_name or "CPU"
        plugin = self._plugin(device)
        return CompiledModel(plugin.compile_model(model, normalize_config(config)))

    def query_model(self, model: Model, device_name: str, config: Any = None) -> dict[str, str]:
        return self._plugin(device_name).query_model(model, normalize_config(config))

    def set_property(self, device_name: Any, properties: Any = None) -> None:
        """``set_property("CPU", {...})`` or ``set_property({...})`` for every device."""
        if properties is None:
            props = normalize_config(device_name)
            for name in self._registry.names():
                plugin = self._registry.get(name)
                known = {k: v for k, v in props.items() if k in plugin.supported_properties()}
                plugin.set_property(known)
            self._global.update(props)
            return
        self._plugin(device_name).set_property(normalize_config(properties))

    def get_property(self, device_name: str, name: Any = None) -> Any:
        if name is None:
            key = str(device_name)
            if key in self._global:
                return self._global[key]
            if key == "AVAILABLE_DEVICES":
                return self.available_devices
            raise PropertyError(f"Core has no global property {key}")
        return self._plugin(device_name).get_property(str(name))

    def get_versions(self, device_name: str) -> dict[str, Any]:
        from vinerun import __version__
        from vinerun.runtime.version import Version

        self._plugin(device_name)
        return {split_device(device_name): Version(__version__, f"vinerun {split_device(device_name)} plugin")}

    def register_plugin(self, plugin: Any, device_name: str, config: dict[str, Any] | None = None) -> None:
        """Register a plugin (instance, class or ``"module:Class"``) under ``device_name``."""
        self._registry.register(device_name, plugin)

    def add_extension(self, extension: Any) -> None:
        from vinerun.errors import NotSupportedError

        raise NotSupportedError("Core.add_extension: custom op extensions are not supported yet")

    def __repr__(self) -> str:
        return f"<Core: devices {self.available_devices}>"


def compile_model(model: Any, device_name: str | None = None, config: Any = None) -> CompiledModel:
    """Module-level shortcut: ``vinerun.compile_model("model.onnx", "CPU")``."""
    return Core().compile_model(model, device_name, config)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
