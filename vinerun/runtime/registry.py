"""Finds device plugins: Python entry points in group ``vinerun.plugins``, then the built-ins.

A third-party package ships a device by declaring
``[project.entry-points."vinerun.plugins"] MYDEV = "mypkg:MyPlugin"``.
"""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import entry_points
from typing import Any

from vinerun.errors import DeviceError, NotSupportedError

# Built-in devices, as "module:Class" strings so the runtime never imports a plugin directly.
BUILTIN = {"CPU": "vinerun.plugins.cpu:CPUPlugin", "GPU": "vinerun.plugins.gpu:GPUPlugin",
           "GNA": "vinerun.plugins.gna:GNAPlugin",
           "AUTO": "vinerun.virtual.auto:AutoPlugin", "MULTI": "vinerun.virtual.auto:MultiPlugin",
           "HETERO": "vinerun.virtual.hetero:HeteroPlugin", "BATCH": "vinerun.virtual.batch:BatchPlugin"}

_lock = threading.Lock()


class PluginRegistry:
    """Device name -> plugin instance, created on first use."""

    def __init__(self) -> None:
        self._specs: dict[str, Any] = dict(BUILTIN)
        for ep in entry_points(group="vinerun.plugins"):
            self._specs[ep.name.upper()] = ep
        self._instances: dict[str, Any] = {}

    def names(self) -> list[str]:
        return list(self._specs)

    def register(self, name: str, plugin: Any) -> None:
        """Register a plugin instance or a ``"module:Class"`` string under ``name``."""
        self._specs[name.upper()] = plugin
        self._instances.pop(name.upper(), None)

    def unload(self, name: str) -> bool:
        """Drop the instance made for ``name`` (it is made again on next use); whether there was one."""
        with _lock:
            return self._instances.pop(name.upper(), None) is not None

    def get(self, name: str) -> Any:
        key = name.upper()
        with _lock:
            inst = self._instances.get(key)
            if inst is not None:
                return inst
            spec = self._specs.get(key)
            if spec is None:
                raise DeviceError(f"Device with \"{name}\" name is not registered in vinerun. "
                                  f"Available devices: {', '.join(self._specs)}")
            inst = self._instantiate(spec)
            self._instances[key] = inst
            return inst

    @staticmethod
    def _instantiate(spec: Any) -> Any:
        if isinstance(spec, str):
            module, sep, cls = spec.partition(":")
            if not sep:
                # an OpenVINO plugins.xml location or register_plugin("openvino_x_plugin"): a C++ library
                raise NotSupportedError(f"Cannot load library '{spec}': vinerun plugins are Python classes "
                                        "('module:Class'); OpenVINO C++ plugin libraries are not supported")
            return getattr(importlib.import_module(module), cls)()
        if hasattr(spec, "load"):
            return spec.load()()
        return spec() if isinstance(spec, type) else spec
