"""The compiled-model blob: what ``export_model`` writes and ``import_model`` / ``CACHE_DIR`` read.

Layout (all integers little-endian)::

    0   8 bytes   magic  b"VINERUN\\x1a"
    8   u16       blob format version (FORMAT_VERSION)
    10  u16       reserved (0)
    12  u32       header length H
    16  H bytes   header, JSON (utf-8): vinerun version, device, compile options and their hash,
                  compile config, source-file info, model name, sections (name, size, crc32)
    16+H ...      the sections, back to back: "xml" and "bin" (the compiled graph as uncompressed
                  OpenVINO IR v11, written by vinerun's own IR writer)

Every check names what is wrong (:class:`~vinerun.errors.BlobError`): not a blob, truncated,
corrupt, another format version, another vinerun version, another device.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from vinerun._version import __version__
from vinerun.errors import BlobError, ModelReadError, UnsupportedOpError
from vinerun.ir.core_ops import Constant
from vinerun.ir.model import Model
from vinerun.plugin_api.property_table import CACHE_KEYS, plain_value

if TYPE_CHECKING:
    from vinerun.plugin_api.compiled_model import ICompiledModel
    from vinerun.plugin_api.plugin import IPlugin

MAGIC = b"VINERUN\x1a"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sHHI")
PREFIX_SIZE = _PREFIX.size  # 16
#: a header larger than this is taken as corruption, not as a header
_MAX_HEADER = 64 << 20


@dataclass
class SourceFile:
    """A model file a blob was compiled from, as ``os.stat`` saw it then."""

    path: str
    mtime_ns: int
    size: int


@dataclass
class BlobHeader:
    """What a blob says about itself (everything but the graph bytes).

    >>> h = BlobHeader(device="CPU")
    >>> h.vinerun_version == __version__
    True
    """

    device: str
    vinerun_version: str = __version__
    options: dict[str, Any] = field(default_factory=dict)
    options_hash: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    source: list[SourceFile] | None = None
    model_name: str = ""
    sections: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode("utf-8")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BlobHeader:
        source = data.get("source")
        return cls(device=str(data["device"]), vinerun_version=str(data["vinerun_version"]),
                   options=dict(data.get("options") or {}), options_hash=str(data.get("options_hash", "")),
                   config=dict(data.get("config") or {}),
                   source=None if source is None else [SourceFile(**s) for s in source],
                   model_name=str(data.get("model_name", "")), sections=list(data["sections"]))

    @property
    def payload_size(self) -> int:
        return sum(int(s["size"]) for s in self.sections)


@dataclass
class Blob:
    """A parsed blob: its header and its sections (views into the original bytes)."""

    header: BlobHeader
    sections: dict[str, memoryview]

    def model(self) -> Model:
        """The compiled graph, read back with vinerun's IR reader."""
        from vinerun.frontends.openvino_ir import read_ir

        try:
            return read_ir(bytes(self.sections["xml"]), self.sections["bin"])
        except KeyError as e:
            raise BlobError(f"compiled-model blob has no '{e.args[0]}' section") from None
        except ModelReadError as e:
            raise BlobError(f"compiled-model blob: its graph cannot be read back: {e}") from e


def options_hash(options: dict[str, Any]) -> str:
    """A short, stable hash of compile options (keys sorted, values made plain)."""
    text = json.dumps({str(k): plain_value(v) for k, v in options.items()}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def check_writable(model: Model) -> None:
    """Raise :class:`UnsupportedOpError` for a node with a graph or tensor attribute that the IR writer
    would leave out (so a blob never silently loses a ``score_mod`` body or a ``LabelEncoder`` table)."""
    from vinerun.frontends.openvino_ir.writer import WRITE_HOOKS

    for node in model.get_ordered_ops():
        if isinstance(node, Constant):  # written as weights
            continue
        for name, spec in node._attr_specs.items():
            value = getattr(node, name, None)
            if value is None or spec.kind not in ("model", "models", "tensor"):
                continue
            if node.type_name not in WRITE_HOOKS:
                raise UnsupportedOpError(f"{node.type_name} '{node.friendly_name}': its {spec.kind} attribute "
                                         f"'{name}' cannot be written to OpenVINO IR, so the compiled model "
                                         "cannot be exported or cached")
            if spec.kind != "tensor":
                for body in value if isinstance(value, (list, tuple)) else [value]:
                    check_writable(body)


def serialize_graph(model: Model) -> dict[str, bytes]:
    """``model`` -> the blob's ``xml`` and ``bin`` sections (IR v11, weights uncompressed)."""
    from vinerun.frontends.openvino_ir import serialize_ir

    check_writable(model)
    xml, weights = serialize_ir(model, compress_to_fp16=False)
    return {"xml": xml, "bin": weights}


def write_blob(header: BlobHeader, sections: dict[str, bytes]) -> list[bytes]:
    """The blob as a list of byte strings to write in order (the sections are not copied)."""
    header.sections = [{"name": name, "size": len(data), "crc32": zlib.crc32(data)}
                       for name, data in sections.items()]
    head = header.to_json()
    return [_PREFIX.pack(MAGIC, FORMAT_VERSION, 0, len(head)), head, *sections.values()]


def read_header(data: bytes | memoryview, what: str = "blob") -> tuple[BlobHeader, int]:
    """Parse and check the prefix and header of ``data``; returns (header, offset of the sections).

    ``data`` may hold only the start of the blob: a short buffer that still holds the whole header
    is fine, so a cache can look at the header without reading the graph.
    """
    if len(data) < PREFIX_SIZE:
        if bytes(data[:len(MAGIC)]) != MAGIC[:len(data)]:
            raise BlobError(f"{what} is not a vinerun compiled-model blob (wrong magic)")
        raise BlobError(f"{what} is truncated: {len(data)} bytes, shorter than the {PREFIX_SIZE}-byte prefix")
    magic, version, _, head_len = _PREFIX.unpack_from(data, 0)
    if magic != MAGIC:
        raise BlobError(f"{what} is not a vinerun compiled-model blob (wrong magic {magic!r}, "
                        f"expected {MAGIC!r})")
    if version != FORMAT_VERSION:
        raise BlobError(f"{what} has blob format version {version}; vinerun {__version__} reads format "
                        f"version {FORMAT_VERSION}. Export the model again with this vinerun")
    if head_len > _MAX_HEADER:
        raise BlobError(f"{what} is corrupt: header length {head_len} is not plausible")
    end = PREFIX_SIZE + head_len
    if len(data) < end:
        raise BlobError(f"{what} is truncated: {len(data)} bytes, the header alone needs {end}")
    try:
        header = BlobHeader.from_json(json.loads(bytes(data[PREFIX_SIZE:end]).decode("utf-8")))
    except (ValueError, KeyError, TypeError) as e:
        raise BlobError(f"{what} is corrupt: its header cannot be parsed ({type(e).__name__}: {e})") from None
    if header.vinerun_version != __version__:
        raise BlobError(f"{what} was made by vinerun {header.vinerun_version}; this is vinerun {__version__}. "
                        "A blob is tied to the version that made it: export the model again")
    return header, end


def read_blob(data: bytes | memoryview, device: str | None = None, what: str = "blob") -> Blob:
    """Parse and check a whole blob; ``device`` (when given) must be the one it was compiled for."""
    view = memoryview(data).cast("B")
    header, offset = read_header(view, what)
    if device is not None and header.device.upper() != device.upper():
        raise BlobError(f"{what} was compiled for device {header.device}, not {device}; import it on "
                        f"{header.device} or compile the model for {device}")
    expected = offset + header.payload_size
    if len(view) < expected:
        raise BlobError(f"{what} is truncated: {len(view)} bytes, its header promises {expected}")
    if len(view) > expected:
        raise BlobError(f"{what} is corrupt: {len(view) - expected} unexpected bytes after its last section")
    sections: dict[str, memoryview] = {}
    for sec in header.sections:
        chunk = view[offset:offset + int(sec["size"])]
        offset += int(sec["size"])
        if zlib.crc32(chunk) != int(sec["crc32"]):
            raise BlobError(f"{what} is corrupt: section '{sec['name']}' fails its checksum")
        sections[str(sec["name"])] = chunk
    return Blob(header, sections)


def as_bytes(stream: Any) -> bytes | memoryview:
    """What ``import_model`` accepts: bytes, bytearray, memoryview, a file object, or a u8 Tensor."""
    if isinstance(stream, (bytes, bytearray, memoryview)):
        return stream
    if hasattr(stream, "getvalue"):  # BytesIO: the whole buffer, wherever its position is
        return stream.getvalue()
    if hasattr(stream, "read"):
        return stream.read()
    if hasattr(stream, "data") and hasattr(stream, "element_type"):  # a vinerun Tensor
        return memoryview(stream.data).cast("B")
    raise BlobError(f"import_model takes bytes, io.BytesIO or a file object, not {type(stream).__name__}")


def export_chunks(impl: ICompiledModel, options: dict[str, Any] | None = None,
                  config: dict[str, Any] | None = None, source: list[SourceFile] | None = None) -> list[bytes]:
    """A device's compiled model as blob chunks. ``config`` defaults to the compiled model's own config;
    ``options`` (the caching properties' values) to that config."""
    if config is None:
        config = {k: v for k, v in getattr(impl, "config", {}).items() if k not in CACHE_KEYS}
    config = {str(k): plain_value(v) for k, v in config.items()}
    options = config if options is None else options
    header = BlobHeader(device=impl.device_name, options=options, options_hash=options_hash(options),
                        config=config, source=source, model_name=impl.model.friendly_name)
    return write_blob(header, serialize_graph(impl.export_graph()))


def import_compiled(stream: Any, plugin: IPlugin, config: dict[str, Any]) -> ICompiledModel:
    """``Core.import_model``: check the blob (for ``plugin``'s device), read its graph, let the device rebuild
    it with the exported config updated by ``config``."""
    blob = read_blob(as_bytes(stream), plugin.device_name, "imported blob")
    supported = plugin.supported_properties()
    # a virtual device's blob stores its devices' configs as DEVICE_PROPERTIES (not a property it lists)
    merged = {k: v for k, v in blob.header.config.items() if supported.get(k) == "RW" or k == "DEVICE_PROPERTIES"}
    merged.update(config)
    return plugin.import_model(blob.model(), merged)
