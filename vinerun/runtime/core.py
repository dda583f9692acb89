"""``Core``: reads models, knows the devices, compiles."""

from __future__ import annotations

import os
from typing import Any

from vinerun.errors import DeviceError, PropertyError
from vinerun.ir.model import Model
from vinerun.runtime.blob import import_compiled
from vinerun.runtime.cache import model_cache
from vinerun.runtime.compiled_model import CompiledModel
from vinerun.runtime.gc_pause import gc_paused
from vinerun.runtime.model_io import read_model as _read_model
from vinerun.runtime.registry import PluginRegistry

DEVICE_PROPERTIES = "DEVICE_PROPERTIES"
#: keys the Core itself keeps (besides the devices' own)
CORE_KEYS = ("CACHE_DIR", "CACHE_MAX_SIZE", "CACHE_MODE", "ENABLE_MMAP", "FORCE_TBB_TERMINATE", DEVICE_PROPERTIES)


def normalize_config(config: Any) -> dict[str, Any]:
    """A config as ``{name: value}``: from a dict, one ``(key, value)`` pair, or a list of pairs.

    Keys may be strings or property keys (``props.hint.performance_mode``); values Python or enum values.
    """
    if config is None:
        return {}
    if isinstance(config, tuple) and len(config) == 2 and isinstance(config[0], str):
        config = dict([config])
    if isinstance(config, (list, tuple, set)):
        try:
            config = dict(config)
        except (TypeError, ValueError):
            raise PropertyError("config must be a dict of property keys to values, or a list of "
                                "(key, value) pairs such as props.cache_dir('dir')") from None
    if not isinstance(config, dict):
        raise PropertyError(f"config must be a dict of property keys to values, not {type(config).__name__}")
    return {str(k): v for k, v in config.items()}


def device_properties(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``DEVICE_PROPERTIES`` entry of ``config`` (removed from it) as ``{device: {name: value}}``."""
    value = config.pop(DEVICE_PROPERTIES, None)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise PropertyError(f"{DEVICE_PROPERTIES} takes {{device name: {{property: value}}}}, got {value!r}")
    return {str(d).upper(): normalize_config(v) for d, v in value.items()}


def apply_device_properties(config: dict[str, Any], device: str, keep_others: bool = False) -> dict[str, Any]:
    """``config`` with ``DEVICE_PROPERTIES[device]`` merged in (the per-device values win).

    With ``keep_others`` (a virtual device) the entries for other devices stay under ``DEVICE_PROPERTIES``,
    for the virtual device to pass on to the compiles it asks for (``AUTO`` with ``{"CPU": {...}}``)."""
    per_device = device_properties(config)
    names = (split_device(device).upper(), device.strip().upper())
    for name in names:
        config.update(per_device.get(name, {}))
    others = {d: v for d, v in per_device.items() if d not in names}
    if keep_others and others:
        config[DEVICE_PROPERTIES] = others
    return config


#: the key a virtual device's device-string suffix is passed under (``ov::device::priorities``)
DEVICE_PRIORITIES = "MULTI_DEVICE_PRIORITIES"


def _is_virtual(plugin: Any) -> bool:
    """AUTO, MULTI, HETERO, BATCH: plugins that compile on other devices."""
    return bool(getattr(plugin, "virtual", False))


def split_device(device_name: str) -> str:
    """The plugin name of a device string: ``"CPU.0"`` -> ``"CPU"``, ``"AUTO:GNA,CPU"`` -> ``"AUTO"``,
    ``"BATCH:CPU(8)"`` -> ``"BATCH"``."""
    base = device_name.strip().split(":", 1)[0].strip()
    if "." in base and base.split(".", 1)[1].isdigit():
        base = base.split(".", 1)[0]
    return base


def device_name_config(device_name: str) -> dict[str, str]:
    """What a device string says besides the plugin name, as config (OpenVINO's
    ``parseDeviceNameIntoConfig``): ``"HETERO:GNA,CPU"`` -> ``{MULTI_DEVICE_PRIORITIES: "GNA,CPU"}``,
    ``"BATCH:CPU(8)"`` -> ``{MULTI_DEVICE_PRIORITIES: "CPU(8)"}``."""
    _, sep, rest = device_name.strip().partition(":")
    if not sep:
        return {}
    if not rest.strip():
        raise DeviceError(f"Device string {device_name!r} names no devices after ':' "
                          "(write e.g. 'AUTO:GNA,CPU' or 'BATCH:CPU(8)')")
    return {DEVICE_PRIORITIES: rest.strip()}


class CoreServices:
    """What a virtual device (AUTO, MULTI, HETERO, BATCH) may ask of the Core that created it:
    compile on, query and read properties of other devices. Set as ``plugin.core``.

    >>> sub = plugin.core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY"})  # ICompiledModel
    """

    def __init__(self, core: Core) -> None:
        self._core = core

    @property
    def available_devices(self) -> list[str]:
        return self._core.available_devices

    def compile_model(self, model: Model, device_name: str, config: dict[str, Any] | None = None) -> Any:
        """The device's ``ICompiledModel`` (through the model cache when ``CACHE_DIR`` is set)."""
        return self._core.compile_model(model, device_name, dict(config or {}))._impl

    def query_model(self, model: Model, device_name: str, config: dict[str, Any] | None = None) -> dict[str, str]:
        return self._core.query_model(model, device_name, dict(config or {}))

    def is_cached(self, model: Model, device_name: str, config: dict[str, Any] | None = None) -> bool:
        """Whether ``compile_model(model, device_name, config)`` would load a blob from ``CACHE_DIR``."""
        plugin = self._core._plugin(device_name)
        cfg = apply_device_properties(normalize_config(dict(config or {})), device_name, _is_virtual(plugin))
        cfg = {**device_name_config(device_name), **cfg}
        cache = model_cache(self._core, plugin, cfg)
        return cache is not None and cache.contains(model, plugin, device_name, cfg)

    def get_property(self, device_name: str, key: str) -> Any:
        return self._core.get_property(device_name, key)

    def plugin(self, device_name: str) -> Any:
        """The ``IPlugin`` behind a device name (for ``supported_properties`` and the like)."""
        return self._core._plugin(device_name)


class Core:
    """Entry point of the runtime.

    >>> core = Core()
    >>> model = core.read_model("model.onnx")
    >>> compiled = core.compile_model(model, "CPU")
    """

    def __init__(self, xml_config_file: str = ""):
        self._registry = PluginRegistry()
        self._global: dict[str, Any] = {}
        self._services = CoreServices(self)

    @property
    def available_devices(self) -> list[str]:
        out = []
        for name in self._registry.names():
            try:
                plugin = self._registry.get(name)
            except Exception:  # noqa: BLE001 - a broken third-party plugin must not hide the others
                continue
            if getattr(plugin, "virtual", False):
                continue  # AUTO, MULTI, HETERO, BATCH are not devices to list (as in OpenVINO)
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
        plugin = self._registry.get(split_device(device_name))
        plugin.core = self._services
        return plugin

    def read_model(self, model: Any, weights: Any = None, config: dict[str, Any] | None = None) -> Model:
        """Read ONNX or OpenVINO IR from a path, ``Path``, bytes or a file object."""
        if isinstance(model, Model):
            return model
        with gc_paused():
            return _read_model(model, weights)

    def compile_model(self, model: Any, device_name: str | None = None, config: Any = None) -> CompiledModel:
        """Compile a Model (or a model path) for ``device_name`` (default ``AUTO``, as OpenVINO).

        A virtual device (``plugin.virtual = True``) is not cached itself: it gets a ``CACHE_DIR`` key in its
        config, and the compiles it asks for on real devices use the cache."""
        device = device_name or "AUTO"
        plugin = self._plugin(device)
        cfg = apply_device_properties(normalize_config(config), device, _is_virtual(plugin))
        cfg = {**device_name_config(device), **cfg}
        with gc_paused():
            # CACHE_DIR: load a blob or compile and store one
            cache = None if _is_virtual(plugin) else model_cache(self, plugin, cfg)
            if cache is not None:
                return cache.compile_model(model, plugin, device, cfg, self.read_model)
            if not isinstance(model, Model):
                model = self.read_model(model)
            return CompiledModel(plugin.compile_model(model, cfg))

    def import_model(self, model_stream: Any, device_name: str, config: Any = None) -> CompiledModel:
        """A compiled model from ``CompiledModel.export_model()`` output (bytes or ``io.BytesIO``).

        The blob's header is checked first: a wrong magic, truncation, another vinerun version or
        another device raise :class:`~vinerun.errors.BlobError` saying which.
        """
        return CompiledModel(import_compiled(model_stream, self._plugin(device_name), normalize_config(config)))

    def query_model(self, model: Model, device_name: str, config: Any = None) -> dict[str, str]:
        plugin = self._plugin(device_name)
        cfg = apply_device_properties(normalize_config(config), device_name, _is_virtual(plugin))
        return plugin.query_model(model, {**device_name_config(device_name), **cfg})

    def set_property(self, device_name: Any, properties: Any = None) -> None:
        """``set_property("CPU", {...})``, ``set_property("CPU", key(value))`` or ``set_property({...})``.

        Without a device the values go to every device that supports them; a key that no device and
        not the Core knows is an error. ``DEVICE_PROPERTIES`` sets values on the devices it names.
        """
        if properties is None:
            props = normalize_config(device_name)
            for dev, values in device_properties(props).items():
                self._plugin(dev).set_property(values)
            plugins = [self._registry.get(name) for name in self._registry.names()]
            unknown = [k for k in props if k not in CORE_KEYS
                       and not any(k in p.supported_properties() for p in plugins)]
            if unknown:
                raise PropertyError(f"Unsupported property {', '.join(unknown)}: no device supports it "
                                    f"(devices: {', '.join(self._registry.names())})")
            for plugin in plugins:
                plugin.set_property({k: v for k, v in props.items() if k in plugin.supported_properties()})
            self._global.update({k: v for k, v in props.items() if k in CORE_KEYS})
            return
        props = apply_device_properties(normalize_config(properties), str(device_name))
        self._plugin(device_name).set_property(props)

    def get_property(self, device_name: Any, name: Any = None) -> Any:
        """``get_property("CPU", key)`` -> the typed value; ``get_property(key)`` -> a Core-wide value."""
        if name is None:
            key = str(device_name)
            if key in self._global:
                return self._global[key]
            if key == "AVAILABLE_DEVICES":
                return self.available_devices
            if key == "SUPPORTED_PROPERTIES":
                return {**{k: "RW" for k in CORE_KEYS}, "AVAILABLE_DEVICES": "RO", "SUPPORTED_PROPERTIES": "RO"}
            if key in CORE_KEYS:
                return "" if key == "CACHE_DIR" else None
            raise PropertyError(f"Core has no global property {key}; ask a device: get_property('CPU', '{key}')")
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
