"""``Core``: reads models, knows the devices, compiles."""

from __future__ import annotations

import io
import os
from typing import Any

from vinerun.errors import DeviceError, ModelReadError, NotSupportedError, PropertyError
from vinerun.ir.model import Model
from vinerun.properties._key import unwrap
from vinerun.runtime import auto_batching
from vinerun.runtime.blob import import_compiled
from vinerun.runtime.cache import model_cache
from vinerun.runtime.compiled_model import CompiledModel
from vinerun.runtime.extension import Extension
from vinerun.runtime.gc_pause import gc_paused
from vinerun.runtime.model_io import read_model as _read_model
from vinerun.runtime.registry import PluginRegistry
from vinerun.runtime.remote import RemoteContext

DEVICE_PROPERTIES = "DEVICE_PROPERTIES"
#: keys the Core itself keeps (besides the devices' own)
CORE_KEYS = ("CACHE_DIR", "CACHE_MAX_SIZE", "CACHE_MODE", "ENABLE_MMAP", "FORCE_TBB_TERMINATE", DEVICE_PROPERTIES,
             auto_batching.ALLOW)


def normalize_config(config: Any) -> dict[str, Any]:
    """A config as ``{name: value}``: from a dict, one ``(key, value)`` pair, or a list of pairs.

    Keys may be strings or property keys (``props.hint.performance_mode``); values Python or enum values, or the
    ``OVAny`` that ``key(value)`` pairs hold (unwrapped here).
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
    return {str(k): unwrap(v) for k, v in config.items()}


def make_cache_dir(config: dict[str, Any], strict: bool = True) -> None:
    """Create the ``CACHE_DIR`` a config names (with its parents), as OpenVINO does when the key is set.

    Not ``strict`` (a compile): a directory that cannot be made is left to the model cache, which warns and
    compiles without caching."""
    cache_dir = config.get("CACHE_DIR")
    if cache_dir:
        try:
            os.makedirs(os.fspath(cache_dir), exist_ok=True)
        except OSError as e:
            if strict:
                raise PropertyError(f"CACHE_DIR '{cache_dir}' cannot be created: {e.strerror or e}") from e


#: what OpenVINO says when ``model`` is neither a path nor a buffer
_NOT_A_PATH = ("Path: '{}' does not exist. Please provide valid model's path either as a string, bytes or "
               "pathlib.Path. Examples:\n(1) '/home/user/models/model.onnx'\n"
               "(2) Path('/home/user/models/model/model.onnx')")


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
        cfg, _ = self._core._compile_config(plugin, device_name, config)
        cache = model_cache(self._core, plugin, cfg)
        return cache is not None and cache.contains(model, plugin, device_name, cfg)

    def get_property(self, device_name: str, key: str, arguments: dict[str, Any] | None = None) -> Any:
        return self._core.get_property(device_name, key, arguments)

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
        self._extensions: list[Extension] = []
        #: device -> (keys, error) of a Core-wide set_property value the device refused (raised when it is used)
        self._deferred: dict[str, tuple[set[str], Exception]] = {}
        if xml_config_file:
            self.register_plugins(xml_config_file)

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

    def _plugin(self, device_name: str, setting: bool = False) -> Any:
        """The plugin of ``device_name``; raises a value it refused from a Core-wide ``set_property`` unless
        it is ``setting`` new values."""
        if not isinstance(device_name, str) or not device_name.strip():
            raise DeviceError(f"Device name must be a non-empty string, got {device_name!r}")
        plugin = self._registry.get(split_device(device_name))
        deferred = self._deferred.get(split_device(device_name).upper())
        if deferred is not None and not setting:
            keys, error = deferred
            raise PropertyError(f"{split_device(device_name)} refused {', '.join(sorted(keys))} set by "
                                f"Core.set_property for every device: {error}") from error
        plugin.core = self._services
        return plugin

    def read_model(self, model: Any, weights: Any = None, config: Any = None) -> Model:
        """Read ONNX or OpenVINO IR from a path (``str`` or ``Path``), IR text, bytes, a file object; ``weights``
        as a path, bytes, a file object or a u8 ``Tensor`` (``tensor_from_file``).

        ``config`` holds Core properties for this read only (the Core's own values do not change); a
        ``CACHE_DIR`` in it is created, as OpenVINO does."""
        if isinstance(model, Model):
            return model
        if not isinstance(model, (str, bytes, bytearray, memoryview, os.PathLike, io.IOBase)):
            raise TypeError(f"Provided python object type {type(model)} isn't supported as 'model' argument.")
        make_cache_dir(normalize_config(config))
        with gc_paused():
            return _read_model(model, weights)

    def compile_model(self, model: Any, device_name: Any = None, config: Any = None, *,
                      weights: Any = None) -> CompiledModel:
        """Compile a Model, a model path, or a model in memory (IR text or bytes with ``weights`` bytes) for
        ``device_name`` (default ``AUTO``, as OpenVINO). Also ``compile_model(xml, weights, device, config)``.

        A virtual device (``plugin.virtual = True``) is not cached itself: it gets a ``CACHE_DIR`` key in its
        config, and the compiles it asks for on real devices use the cache."""
        if isinstance(device_name, (bytes, bytearray, memoryview)) and weights is None:
            # compile_model(model_buffer, weights_buffer, device_name, config): OpenVINO's in-memory form
            weights, device_name, config = device_name, config, None
        if weights is not None:
            if not isinstance(model, (str, bytes, bytearray, memoryview, os.PathLike)):
                raise TypeError("compile_model with weights takes the model as IR text, bytes or a path, "
                                f"not {type(model).__name__}")
            in_memory = isinstance(model, str) and model.lstrip().startswith("<")
            model = _read_model(model.encode() if in_memory else model, weights)
        elif not isinstance(model, (Model, str, bytes, bytearray, memoryview, os.PathLike, io.IOBase)):
            # OpenVINO takes paths as str or pathlib.Path only (never str() of another object)
            raise ModelReadError(_NOT_A_PATH.format(model))
        if device_name is not None and not isinstance(device_name, str):
            if isinstance(device_name, RemoteContext):
                device_name = device_name.get_device_name()
            else:
                raise TypeError(f"compile_model: device_name must be a str, not {type(device_name).__name__}")
        device = device_name or "AUTO"
        plugin = self._plugin(device)
        cfg, allow_batching = self._compile_config(plugin, device, config)
        make_cache_dir(cfg, strict=False)
        if allow_batching and auto_batching.applies(plugin, cfg):
            with gc_paused():
                model = model if isinstance(model, Model) else self.read_model(model)
                return CompiledModel(self._plugin("BATCH").compile_implicit(model, device, cfg))
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
        """Which device runs each op of ``model``: ``{friendly name: device}`` for the ops it supports."""
        plugin = self._plugin(device_name)
        return plugin.query_model(model, self._compile_config(plugin, device_name, config)[0])

    def _compile_config(self, plugin: Any, device: str, config: Any) -> tuple[dict[str, Any], bool]:
        """The config a compile or query on ``device`` hands ``plugin`` (``DEVICE_PROPERTIES`` applied, the device
        string's suffix as ``MULTI_DEVICE_PRIORITIES``), and whether automatic batching is allowed (a real
        device: the Core takes ``ALLOW_AUTO_BATCHING`` out; a virtual one passes it on)."""
        virtual = _is_virtual(plugin)
        cfg = apply_device_properties(normalize_config(config), device, virtual)
        cfg = {**device_name_config(device), **cfg}
        default = self._global.get(auto_batching.ALLOW, True)
        return cfg, (False if virtual else auto_batching.take_allow(cfg, default))

    def set_property(self, device_name: Any, properties: Any = None) -> None:
        """``set_property("CPU", {...})``, ``set_property("CPU", key(value))`` or ``set_property({...})``.

        Without a device the values go to every device that supports them; a key that no device and
        not the Core knows is an error. A value one device refuses (``INFERENCE_PRECISION_HINT=f32`` for GNA)
        is that device's error when it is next used, as in OpenVINO, not an error for the others.
        ``DEVICE_PROPERTIES`` sets values on the devices it names.
        """
        if properties is None:
            props = normalize_config(device_name)
            make_cache_dir(props)
            for dev, values in device_properties(props).items():
                self._plugin(dev, setting=True).set_property(values)
                self._clear_deferred(split_device(dev).upper(), values)
            plugins = self._loadable_plugins()
            unknown = [k for k in props if k not in CORE_KEYS
                       and not any(k in p.supported_properties() for p in plugins.values())]
            if unknown:
                raise PropertyError(f"Unsupported property {', '.join(unknown)}: no device supports it "
                                    f"(devices: {', '.join(self._registry.names())})")
            for name, plugin in plugins.items():
                values = {k: v for k, v in props.items() if k in plugin.supported_properties()}
                if values:
                    self._set_or_defer(name, plugin, values)
            self._global.update({k: v for k, v in props.items() if k in CORE_KEYS})
            return
        props = apply_device_properties(normalize_config(properties), str(device_name))
        make_cache_dir(props)
        self._plugin(device_name, setting=True).set_property(props)
        self._clear_deferred(split_device(str(device_name)).upper(), props)

    def _loadable_plugins(self) -> dict[str, Any]:
        """Every registered plugin that loads (one that does not is that device's error when used)."""
        plugins = {}
        for name in self._registry.names():
            try:
                plugins[name] = self._registry.get(name)
            except Exception:  # noqa: BLE001 - a broken third-party plugin must not break the others
                continue
        return plugins

    def _set_or_defer(self, name: str, plugin: Any, values: dict[str, Any]) -> None:
        try:
            plugin.set_property(values)
        except PropertyError:
            # one key at a time: the device keeps the values it accepts, the ones it refuses wait for its use
            refused, first = set(), None
            for key, value in values.items():
                try:
                    plugin.set_property({key: value})
                except PropertyError as e:
                    refused.add(key)
                    first = first or e
            self._deferred[name] = (refused, first)
        else:
            self._clear_deferred(name, values)

    def _clear_deferred(self, name: str, values: dict[str, Any]) -> None:
        """A deferred error is gone once the keys it was about are set again successfully."""
        keys, _ = self._deferred.get(name, (None, None))
        if keys is not None and keys <= set(values):
            del self._deferred[name]

    def get_property(self, device_name: Any, name: Any = None, arguments: dict[str, Any] | None = None) -> Any:
        """``get_property("CPU", key)`` -> the typed value; ``get_property(key)`` -> a Core-wide value;
        ``get_property("GPU", "OPTIMAL_BATCH_SIZE", {"MODEL_PTR": model})``: a value computed for the arguments."""
        if name is None:
            key = str(device_name)
            if key in self._global:
                return self._global[key]
            if key == "AVAILABLE_DEVICES":
                return self.available_devices
            if key == "SUPPORTED_PROPERTIES":
                return {**{k: "RW" for k in CORE_KEYS}, "AVAILABLE_DEVICES": "RO", "SUPPORTED_PROPERTIES": "RO"}
            if key in CORE_KEYS:
                return {"CACHE_DIR": "", auto_batching.ALLOW: True}.get(key)
            raise PropertyError(f"Core has no global property {key}; ask a device: get_property('CPU', '{key}')")
        options = {str(k): getattr(v, "_model", v) for k, v in arguments.items()} if arguments else None
        return self._plugin(device_name).get_property(str(name), options)

    def get_versions(self, device_name: str) -> dict[str, Any]:
        """``{device: Version}`` for the plugin behind ``device_name`` (loading it)."""
        from vinerun import __version__
        from vinerun.runtime.version import Version

        self._plugin(device_name)
        return {split_device(device_name): Version(__version__, f"vinerun {split_device(device_name)} plugin")}

    def register_plugin(self, plugin: Any, device_name: str, config: dict[str, Any] | None = None) -> None:
        """Register a plugin (instance, class or ``"module:Class"``) under ``device_name``."""
        self._registry.register(device_name, plugin)

    def register_plugins(self, xml_config_file: str | os.PathLike) -> None:
        """Register the plugins an OpenVINO ``plugins.xml`` lists (``<plugin name=... location=...>``); each
        ``location`` is loaded when the device is first used (``"module:Class"``; C++ libraries raise then)."""
        import xml.etree.ElementTree as ET

        try:
            root = ET.parse(os.fspath(xml_config_file)).getroot()
        except (OSError, ET.ParseError) as e:
            raise RuntimeError(f"Cannot read plugins file '{xml_config_file}': {e}") from e
        for node in root.iter("plugin"):
            name, location = node.get("name"), node.get("location")
            if not name or not location:
                raise RuntimeError(f"'{xml_config_file}': each <plugin> needs 'name' and 'location' attributes")
            self._registry.register(name, location)

    def unload_plugin(self, device_name: str) -> None:
        """Drop the loaded plugin of ``device_name`` (it is loaded again on next use)."""
        if not self._registry.unload(split_device(device_name)):
            raise DeviceError(f"Device with \"{device_name}\" name is not registered in the OpenVINO Runtime")

    def add_extension(self, extension: Any) -> None:
        """Add an ``Extension`` (or a list of them). OpenVINO C++ extension libraries (a path) cannot be
        loaded by vinerun: they raise ``NotSupportedError``."""
        items = extension if isinstance(extension, list) else [extension]
        for item in items:
            if isinstance(item, (str, os.PathLike)):
                raise NotSupportedError(f"Cannot add extension '{os.fspath(item)}': OpenVINO C++ extension "
                                        "libraries cannot be loaded by vinerun (it runs Python extensions only)")
            if not isinstance(item, Extension):
                raise TypeError(f"add_extension takes an Extension or a list of them, not {type(item).__name__}")
        self._extensions.extend(items)

    def get_default_context(self, device_name: str) -> RemoteContext:
        """The device's default remote context (device memory shared with the application).

        A device without remote memory raises, as OpenVINO's CPU plugin does."""
        return self._remote(device_name, "get_default_context")()

    def create_context(self, device_name: str, properties: Any) -> RemoteContext:
        """A remote context on ``device_name`` from ``properties`` (a device's own handles)."""
        return self._remote(device_name, "create_context")(normalize_config(properties))

    def _remote(self, device_name: str, method: str) -> Any:
        plugin = self._plugin(device_name)
        found = getattr(plugin, method, None)
        if found is None:
            raise NotSupportedError(f"Not Implemented:\n{method} is not supported by {split_device(device_name)} "
                                    "plugin!")
        return found

    def __repr__(self) -> str:
        return f"<Core: devices {self.available_devices}>"


def compile_model(model: Any, device_name: str | None = None, config: Any = None) -> CompiledModel:
    """Module-level shortcut: ``vinerun.compile_model("model.onnx", "CPU")``."""
    return Core().compile_model(model, device_name, config)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
