"""Loads and unloads model versions, serves lookups, and reloads on config or folder changes.

Reload order keeps clients served: new versions load first, then retired ones are drained (in-flight
requests finish) and dropped. A request for a version that is loading waits up to 10 s (OVMS).

>>> manager = ModelManager(Core(), ServerConfig.from_args(["--model_name", "m", "--model_path", "models/m",
...                                                        "--rest_port", "8000"]))  # doctest: +SKIP
>>> manager.start()                                       # doctest: +SKIP
>>> with manager.use("m", None) as version:              # doctest: +SKIP
...     version.submit({"x": array}).result()
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from vinerun.runtime import Core
from vinerun.serving.config import ConfigFile, ModelConfig, ServerConfig, load_config_file
from vinerun.serving.errors import (
    ConfigReloadFailed,
    ModelNotFound,
    ModelNotLoadedYet,
    ModelVersionNotFound,
    ModelVersionRetired,
)
from vinerun.serving.policy import ConfigError
from vinerun.serving.repository import scan_versions
from vinerun.serving.servable import STATES, ServedVersion
from vinerun.serving.tensors import VersionStatus

log = logging.getLogger("vinerun.serving")
#: OVMS's DEFAULT_WAIT_FOR_MODEL_LOADED_TIMEOUT_MS
WAIT_FOR_LOADED_S = 10.0


@dataclass
class ModelEntry:
    """A served model name: its config, loaded versions and the status of every version seen.

    >>> ModelEntry(ModelConfig("m", "/models/m")).available()
    []
    """

    config: ModelConfig
    versions: dict[int, ServedVersion] = field(default_factory=dict)
    status: dict[int, VersionStatus] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def available(self) -> list[int]:
        return sorted(v for v, s in self.versions.items() if s.state == "AVAILABLE")


class ModelManager:
    """All served models; thread-safe lookups, one reload at a time.

    >>> manager.acquire("m", None).version          # the highest AVAILABLE version  # doctest: +SKIP
    2
    """

    def __init__(self, core: Core, config: ServerConfig) -> None:
        self.core = core
        self.config = config
        self.models: dict[str, ModelEntry] = {}
        self._config_md5: str | None = None
        self._reload_lock = threading.Lock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        #: called after a version loads (with it) or unloads (with None), e.g. to update metrics
        self.on_change: list[Callable[[str, int, ServedVersion | None], None]] = []
        #: config.json's ``monitoring.metrics`` ({"enable": bool, "metrics_list": [...]}), read at start
        self.monitoring: dict = {}

    # --- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Load every model (raises ``ConfigError`` for a bad config) and start polling."""
        if self.config.config_path:
            cfg = load_config_file(self.config.config_path)
            self.monitoring = cfg.metrics
            self._apply(cfg.models)
            self._config_md5 = cfg.md5
        else:
            self._apply(self.config.models)
        if self.config.file_system_poll_wait_seconds > 0:
            self._poller = threading.Thread(target=self._poll, name="vinerun-serving-poll", daemon=True)
            self._poller.start()

    def stop(self) -> None:
        """Stop polling and unload everything (in-flight requests finish first)."""
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
        with self._reload_lock:
            for entry in self.models.values():
                for version in list(entry.versions):
                    self._unload(entry, version)

    def _poll(self) -> None:
        while not self._stop.wait(self.config.file_system_poll_wait_seconds):
            try:
                self.reload()
            except Exception as e:  # noqa: BLE001 - a bad config changes nothing; the poller keeps going
                log.error("vinerun serve: reload failed, keeping the current models: %s", e)

    # --- reload ------------------------------------------------------------------------
    def reload(self) -> bool:
        """Re-read config.json (if its MD5 changed) and rescan version folders; ``True`` if anything changed."""
        with self._reload_lock:
            if not self.config.config_path:
                return self._apply(self.config.models)
            try:
                cfg: ConfigFile = load_config_file(self.config.config_path)
            except ConfigError as e:
                raise ConfigReloadFailed() from e
            changed = self._apply(cfg.models)
            self._config_md5 = cfg.md5
            return changed

    def _apply(self, configs: list[ModelConfig]) -> bool:
        changed = False
        wanted = {c.name: c for c in configs}
        for name in list(self.models):
            if name not in wanted:
                entry = self.models[name]
                for version in list(entry.versions):
                    self._unload(entry, version)
                changed = True
        for name, cfg in wanted.items():
            entry = self.models.get(name)
            if entry is None:
                entry = self.models[name] = ModelEntry(cfg)
                changed = True
            elif entry.config != cfg:
                log.info("vinerun serve: config of model %r changed; reloading all its versions", name)
                for version in list(entry.versions):
                    self._unload(entry, version)
                entry.config = cfg
                changed = True
            changed |= self._sync_versions(entry)
        return changed

    def _sync_versions(self, entry: ModelEntry) -> bool:
        cfg = entry.config
        try:
            found = scan_versions(cfg.base_path)
        except ConfigError as e:
            log.error("vinerun serve: model %r: %s", cfg.name, e)
            found = {}
        wanted = set(cfg.version_policy.select(list(found)))
        changed = False
        with entry.cond:
            for version in [v for v, s in entry.status.items() if s.error_code and v not in found]:
                del entry.status[version]  # a failed version whose folder went away may be retried later
        for version in sorted(wanted - set(entry.versions)):
            if entry.status.get(version) is not None and entry.status[version].error_code:
                continue  # failed before; OVMS does not retry an unchanged folder
            changed = True
            self._load(entry, version, found[version])
        for version in sorted(set(entry.versions) - wanted):
            changed = True
            self._unload(entry, version)
        return changed

    def _load(self, entry: ModelEntry, version: int, path: str) -> None:
        name = entry.config.name
        with entry.cond:
            entry.status[version] = VersionStatus(version, "LOADING")
        t0 = time.perf_counter()
        try:
            served = ServedVersion.load(self.core, name, version, path, entry.config)
        except Exception as e:  # noqa: BLE001 - one bad model is skipped, the others are served
            log.error("vinerun serve: model %r version %d failed to load from %s: %s", name, version, path, e)
            with entry.cond:
                entry.status[version] = VersionStatus(version, "END", 2, f"UNKNOWN: {e}")
                entry.cond.notify_all()
            return
        with entry.cond:
            entry.versions[version] = served
            entry.status[version] = VersionStatus(version, "AVAILABLE")
            entry.cond.notify_all()
        log.info("vinerun serve: model %r version %d loaded from %s on %s in %.2f s", name, version, path,
                 entry.config.target_device, time.perf_counter() - t0)
        for callback in self.on_change:
            callback(name, version, served)

    def _unload(self, entry: ModelEntry, version: int) -> None:
        with entry.cond:
            served = entry.versions.get(version)
            if served is None:
                return
            served.state = "UNLOADING"
            entry.status[version] = VersionStatus(version, "UNLOADING")
        served.drain()
        with entry.cond:
            del entry.versions[version]
            entry.status[version] = VersionStatus(version, "END")
            entry.cond.notify_all()
        served.close()
        log.info("vinerun serve: model %r version %d unloaded", entry.config.name, version)
        for callback in self.on_change:
            callback(entry.config.name, version, None)

    # --- lookups -----------------------------------------------------------------------
    def entry(self, name: str) -> ModelEntry:
        entry = self.models.get(name)
        if entry is None:
            raise ModelNotFound(name)
        return entry

    @staticmethod
    def parse_version(version: str | int | None) -> int | None:
        """``None`` / ``""`` / ``"0"`` -> ``None`` (the default version); else a positive int."""
        if version is None or version == "" or version == 0 or version == "0":
            return None
        try:
            v = int(version)
        except (TypeError, ValueError):
            raise ModelVersionNotFound(f"version {version!r} is not a number") from None
        if v < 0:
            raise ModelVersionNotFound(f"version {version!r}")
        return v

    def _pick(self, entry: ModelEntry, version: int | None) -> ServedVersion | None:
        """Under ``entry.cond``: the version to use, ``None`` to wait, or raise."""
        if version is None:
            available = entry.available()
            if available:
                return entry.versions[available[-1]]
            if any(s.state in ("LOADING", "START") for s in entry.status.values()):
                return None
            raise ModelVersionNotFound(f"model {entry.config.name!r} has no version available")
        served = entry.versions.get(version)
        if served is not None and served.state == "AVAILABLE":
            return served
        status = entry.status.get(version)
        if status is None:
            raise ModelVersionNotFound(f"model {entry.config.name!r} version {version}")
        if status.state in ("LOADING", "START"):
            return None
        if status.state in ("UNLOADING", "END") and not status.error_code:
            raise ModelVersionRetired(f"model {entry.config.name!r} version {version}")
        raise ModelVersionNotFound(f"model {entry.config.name!r} version {version} failed to load: "
                                   f"{status.error_message}")

    def acquire(self, name: str, version: str | int | None, wait: bool = True) -> ServedVersion | None:
        """The served version with its in-flight guard entered (call ``leave()``); waits for a loading one.

        With ``wait=False`` returns ``None`` instead of waiting.
        """
        entry = self.entry(name)
        v = self.parse_version(version)
        deadline = time.monotonic() + WAIT_FOR_LOADED_S
        with entry.cond:
            while True:
                served = self._pick(entry, v)
                if served is not None:
                    served.enter()
                    return served
                if not wait:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ModelNotLoadedYet(f"model {name!r} version {version or 'default'}")
                entry.cond.wait(min(left, 0.05))

    @contextlib.contextmanager
    def use(self, name: str, version: str | int | None) -> Iterator[ServedVersion]:
        served = self.acquire(name, version)
        assert served is not None  # noqa: S101 - acquire(wait=True) never returns None
        try:
            yield served
        finally:
            served.leave()

    def version_status(self, name: str, version: str | int | None = None) -> list[VersionStatus]:
        entry = self.entry(name)
        v = self.parse_version(version)
        with entry.cond:
            if v is None:
                return [entry.status[k] for k in sorted(entry.status)]
            if v not in entry.status:
                raise ModelVersionNotFound(f"model {name!r} version {v}")
            return [entry.status[v]]

    def config_status(self) -> dict:
        """``GET /v1/config``: ``{name: {"model_version_status": [...]}}``."""
        out = {}
        for name, entry in self.models.items():
            with entry.cond:
                out[name] = {"model_version_status": [
                    {"version": str(s.version), "state": s.state,
                     "status": {"error_code": "OK" if not s.error_code else "UNKNOWN",
                                "error_message": s.error_message}}
                    for s in sorted(entry.status.values(), key=lambda s: -s.version)]}
        return out


__all__ = ["STATES", "ModelEntry", "ModelManager", "WAIT_FOR_LOADED_S"]
