"""The model cache (``CACHE_DIR``): compiled-model blobs on disk, keyed by what changes compilation.

One ``<key>.blob`` per (model, device, compile options, vinerun version). The key hashes:

- for a model *path*: the absolute path (and the blob's header records each file's mtime and size,
  so a hit never reads the model, and an edited file makes the entry stale);
- for model *bytes*: the bytes; for a ``Model`` object: its serialized OpenVINO IR (xml + bin);
- the device, the values of the device's caching properties, and the vinerun version.

A blob that fails to load (corrupt, truncated, stale) is deleted, the model recompiled and a warning
logged on the ``"vinerun"`` logger. A read-only or full cache directory never breaks compilation.
Entries are pruned least-recently-used first to ``CACHE_MAX_SIZE`` bytes (default 8 GiB; also
``VINERUN_CACHE_MAX_SIZE``; ``0`` = no limit). See ``docs/caching.md``.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vinerun._version import __version__
from vinerun.errors import BlobError, PropertyError, VinerunError
from vinerun.ir.model import GENERATED_TENSOR_NAMES, Model
from vinerun.runtime import blob as blobfmt
from vinerun.runtime.compiled_model import CompiledModel

logger = logging.getLogger("vinerun")

CACHE_DIR = "CACHE_DIR"
CACHE_MAX_SIZE = "CACHE_MAX_SIZE"
ENV_MAX_SIZE = "VINERUN_CACHE_MAX_SIZE"
DEFAULT_MAX_SIZE = 8 << 30
#: keys the cache consumes; they are not passed on to the device
CACHE_KEYS = (CACHE_DIR, CACHE_MAX_SIZE)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}
_STALE_TEMP_S = 3600.0


def parse_size(value: Any, key: str = CACHE_MAX_SIZE) -> int:
    """``1000``, ``"512MB"``, ``"2 GiB"`` -> bytes (binary units); ``0`` means no limit."""
    if isinstance(value, bool):
        raise PropertyError(f"Wrong value {value!r} for property key {key}: expected a size in bytes")
    if isinstance(value, (int, float)) and value >= 0:
        return int(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
    if m is None or m.group(2).upper() not in _UNITS:
        raise PropertyError(f"Wrong value {value!r} for property key {key}: expected a size in bytes, "
                            "e.g. 4294967296, \"512MB\" or \"4GB\" (0 = no limit)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def compile_options(plugin: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The values of ``plugin``'s caching properties for a compile with ``config``."""
    out: dict[str, Any] = {}
    for key in plugin.caching_properties():
        if key in config:
            value = plugin.check_property(key, config[key])
        elif key in plugin.config:
            value = plugin.config[key]
        else:
            try:
                value = plugin.get_property(key)
            except VinerunError:
                continue
        out[key] = blobfmt.plain_value(value)
    return out


def model_cache(core: Any, plugin: Any, config: dict[str, Any]) -> ModelCache | None:
    """The cache a compile uses, or None. Removes the cache keys from ``config`` (they are not the device's).

    ``CACHE_DIR`` comes from the compile config, else the device's property, else the Core's.
    """
    glob = getattr(core, "_global", {})
    directory = config.pop(CACHE_DIR, None)
    limit = config.pop(CACHE_MAX_SIZE, None)
    if directory is None:
        directory = plugin.config.get(CACHE_DIR) or glob.get(CACHE_DIR)
    if not directory:
        return None
    name = CACHE_MAX_SIZE
    if limit is None:
        limit = glob.get(CACHE_MAX_SIZE)
    if limit is None and ENV_MAX_SIZE in os.environ:
        limit, name = os.environ[ENV_MAX_SIZE], ENV_MAX_SIZE
    return ModelCache(str(directory), DEFAULT_MAX_SIZE if limit is None else parse_size(limit, name))


def _hash(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p.encode("utf-8") if isinstance(p, str) else p
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:40]


def _auto_names(model: Model, out: dict[str, str]) -> dict[str, str]:
    """Generated friendly names (``Relu_57``: a process-wide counter) -> stable placeholders, in graph order,
    so the same model built twice gets one key. Names a user gave are kept."""
    for node in model.get_ordered_ops():
        if node._friendly_name is None:
            out.setdefault(node.get_name(), f"#auto{len(out)}")
        for name, spec in node._attr_specs.items():
            bodies = getattr(node, name, None) if spec.kind in ("model", "models") else None
            for body in bodies if isinstance(bodies, (list, tuple)) else [bodies] if bodies is not None else []:
                _auto_names(body, out)
    return out


def model_key_bytes(model: Model) -> tuple[bytes, bytes]:
    """The model's IR (xml, bin) with generated layer names made stable: what its cache key hashes."""
    sections = blobfmt.serialize_graph(model)
    names = _auto_names(model, {})
    tensors: dict[str, str] = {}  # numbered apart from layers: a clone renumbers its nodes, not its names


    def stable_layer(m: re.Match[bytes]) -> bytes:
        return m.group(1) + names.get(m.group(2).decode(), m.group(2).decode()).encode() + m.group(3)

    def stable_tensor(m: re.Match[bytes]) -> bytes:
        # a Model's unnamed inputs and outputs take their node's generated name as a tensor name
        values = [tensors.setdefault(v, f"#tensor{len(tensors)}") if v in GENERATED_TENSOR_NAMES else v
                  for v in m.group(2).decode().split(",")]
        return m.group(1) + ",".join(values).encode() + m.group(3)

    xml = re.sub(rb'(<layer id="\d+" name=")([^"]*)(")', stable_layer, sections["xml"])
    xml = re.sub(rb'(<port id="\d+"[^>]* names=")([^"]*)(")', stable_tensor, xml)
    return xml, sections["bin"]


def _adopt_io_names(target: Model, source: Model) -> None:
    """Give ``target``'s Parameters and Results the friendly and tensor names of ``source``'s (same order)."""
    for mine, theirs in [*zip(target.get_parameters(), source.get_parameters(), strict=True),
                         *zip(target.get_results(), source.get_results(), strict=True)]:
        mine.set_friendly_name(theirs.get_friendly_name())
        mine.output(0).set_names(theirs.output(0).get_names())


def _source_files(path: Path) -> list[blobfmt.SourceFile]:
    files = [path]
    if path.suffix.lower() == ".xml" and path.with_suffix(".bin").exists():
        files.append(path.with_suffix(".bin"))
    out = []
    for f in files:
        st = f.stat()
        out.append(blobfmt.SourceFile(str(f), st.st_mtime_ns, st.st_size))
    return out


class ModelCache:
    """A directory of compiled-model blobs, pruned least-recently-used first to ``max_size`` bytes.

    >>> cache = ModelCache("/tmp/vinerun_cache", max_size=1 << 30)   # doctest: +SKIP
    >>> compiled = cache.compile_model("model.onnx", plugin, "CPU", {}, core.read_model)  # doctest: +SKIP
    """

    def __init__(self, directory: str | os.PathLike, max_size: int = DEFAULT_MAX_SIZE):
        self.directory = Path(directory)
        self.max_size = max_size

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.blob"

    # -- compile through the cache ---------------------------------------------------------------
    def compile_model(self, model: Any, plugin: Any, device: str, config: dict[str, Any],
                      read_model: Callable[[Any], Model]) -> CompiledModel:
        """Load ``model`` from its blob when there is a good one, else compile it and store a blob."""
        options = compile_options(plugin, config)
        opt_hash = blobfmt.options_hash(options)
        dev = plugin.device_name or device
        source: list[blobfmt.SourceFile] | None = None
        if isinstance(model, Model):
            try:
                key = _hash("model", *model_key_bytes(model), dev, opt_hash, __version__)
            except VinerunError as e:  # a graph the IR writer cannot express: run uncached
                logger.warning("vinerun cache: model '%s' cannot be cached (%s); compiling without the cache",
                               model.friendly_name, e)
                return CompiledModel(plugin.compile_model(model, config))
        elif isinstance(model, (bytes, bytearray, memoryview)):
            key = _hash("bytes", bytes(model), dev, opt_hash, __version__)
        elif isinstance(model, (str, os.PathLike)) and not str(model).lstrip().startswith("<"):
            path = Path(model).resolve()
            try:
                source = _source_files(path)
            except OSError:
                return CompiledModel(plugin.compile_model(read_model(model), config))  # read_model names the fault
            key = _hash("path", str(path), dev, opt_hash, __version__)
        else:
            model = read_model(model)
            return self.compile_model(model, plugin, device, config, read_model)

        compiled = self._load(key, plugin, dev, opt_hash, source, config,
                              model if isinstance(model, Model) else None)
        if compiled is not None:
            return compiled
        if not isinstance(model, Model):
            model = read_model(model)
        impl = plugin.compile_model(model, config)
        try:
            chunks = blobfmt.export_chunks(impl, options, config, source)
        except VinerunError as e:  # a graph the IR writer cannot express: run uncached
            logger.warning("vinerun cache: model '%s' cannot be stored in %s (%s); compiled without caching",
                           model.friendly_name, self.directory, e)
        else:
            self.store(key, chunks)
        return CompiledModel(impl)

    def contains(self, model: Model, plugin: Any, device: str, config: dict[str, Any]) -> bool:
        """Whether a blob for ``model`` compiled on ``device`` with ``config`` is stored (not checked for staleness)."""
        dev = plugin.device_name or device
        try:
            key = _hash("model", *model_key_bytes(model), dev, blobfmt.options_hash(compile_options(plugin, config)),
                        __version__)
        except VinerunError:
            return False
        return self.path(key).is_file()

    def _load(self, key: str, plugin: Any, device: str, opt_hash: str,
              source: list[blobfmt.SourceFile] | None, config: dict[str, Any],
              model: Model | None = None) -> CompiledModel | None:
        """The compiled model in blob ``key``; with ``model``, its inputs and outputs keep ``model``'s names (the
        key ignores generated names, so the blob may hold another build's)."""
        path = self.path(key)
        try:
            with path.open("rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            logger.warning("vinerun cache: cannot read %s (%s); compiling instead", path, e.strerror or e)
            return None
        try:
            header, _ = blobfmt.read_header(data, f"cache blob {path}")
            if header.device != device or header.options_hash != opt_hash:
                raise BlobError(f"cache blob {path} is stale: compiled for {header.device} with other options")
            if source is not None and header.source != source:
                raise BlobError(f"cache blob {path} is stale: the model file changed since it was compiled")
            stored = blobfmt.read_blob(data, device, f"cache blob {path}").model()
            if model is not None:
                _adopt_io_names(stored, model)
            impl = plugin.import_model(stored, config)
        except PropertyError:
            raise  # the user's config is at fault, not the blob
        except Exception as e:  # noqa: BLE001 - whatever is wrong with a blob, recompiling fixes it
            self.discard(path, str(e) if isinstance(e, VinerunError) else f"{type(e).__name__}: {e}")
            return None
        self._touch(path)
        compiled = CompiledModel(impl)
        compiled._loaded_from_cache = True
        return compiled

    # -- the directory ---------------------------------------------------------------------------
    def discard(self, path: Path, reason: str) -> None:
        """Delete a blob that cannot be used, with a warning that says why."""
        logger.warning("vinerun cache: discarding %s and recompiling: %s", path, reason)
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            logger.warning("vinerun cache: cannot delete %s (%s)", path, e.strerror or e)

    def store(self, key: str, chunks: list[bytes]) -> bool:
        """Write a blob atomically (temp file + rename) and prune; never raises for disk trouble."""
        size = sum(len(c) for c in chunks)
        if self.max_size and size > self.max_size:
            logger.warning("vinerun cache: a %d-byte blob is larger than %s=%d; not cached",
                           size, CACHE_MAX_SIZE, self.max_size)
            return False
        for attempt in (0, 1):
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._write(self.path(key), chunks)
                break
            except OSError as e:
                if attempt == 0 and e.errno in (errno.ENOSPC, errno.EDQUOT):
                    freed = self.prune(target=max(0, self._total() - size), keep=None)
                    if freed:
                        continue
                logger.warning("vinerun cache: cannot write to %s (%s); compiled without caching",
                               self.directory, e.strerror or e)
                return False
        self.prune(keep=self.path(key))
        return True

    def _write(self, path: Path, chunks: list[bytes]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as f:
                for c in chunks:
                    f.write(c)
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; a shared cache must be readable by its other users
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    @staticmethod
    def _touch(path: Path) -> None:
        try:
            os.utime(path)  # modification time = last use: what pruning orders by
        except OSError:
            pass

    def entries(self) -> list[tuple[Path, os.stat_result]]:
        """The blobs, least recently used first."""
        out = []
        try:
            it = list(self.directory.iterdir())
        except OSError:
            return []
        for p in it:
            if p.suffix == ".blob":
                try:
                    out.append((p, p.stat()))
                except OSError:
                    continue
        return sorted(out, key=lambda e: e[1].st_mtime_ns)

    def _total(self) -> int:
        return sum(st.st_size for _, st in self.entries())

    def prune(self, target: int | None = None, keep: Path | None = None) -> int:
        """Delete least-recently-used blobs until the total is at most ``target`` (default ``max_size``),
        and leftover temp files; returns the bytes freed."""
        now = time.time()
        try:
            for p in self.directory.glob(".*.tmp"):
                if now - p.stat().st_mtime > _STALE_TEMP_S:
                    p.unlink()
        except OSError:
            pass
        limit = self.max_size if target is None else target
        if not limit and target is None:
            return 0
        entries = self.entries()
        total = sum(st.st_size for _, st in entries)
        freed = 0
        for p, st in entries:
            if total <= limit:
                break
            if keep is not None and p == keep:
                continue
            try:
                p.unlink()
            except OSError:
                continue
            logger.info("vinerun cache: evicted %s (%d bytes, least recently used)", p.name, st.st_size)
            total -= st.st_size
            freed += st.st_size
        return freed
