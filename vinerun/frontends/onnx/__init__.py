"""The ONNX frontend: ``read_onnx(path_or_bytes)`` -> :class:`vinerun.ir.Model`."""

from __future__ import annotations

import os
from pathlib import Path

from google.protobuf.message import DecodeError

import onnx
from vinerun.errors import ModelReadError
from vinerun.frontends.onnx.converter import convert_model
from vinerun.ir.model import Model


def load_proto(data: bytes, source: str, base_dir: str | None) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeWarning, ValueError) as e:
        raise ModelReadError(f"{source}: not a valid ONNX file (protobuf parse failed: {e}). "
                             "Is the file truncated or corrupt?") from e
    if not proto.HasField("graph"):
        raise ModelReadError(f"{source}: not a valid ONNX file (no graph found; is it truncated or another format?)")
    uses_external = any(
        t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer)
    if uses_external:
        if base_dir is None:
            raise ModelReadError(f"{source}: the model keeps weights in external files; "
                                 "read it from a path so they can be found")
        try:
            onnx.external_data_helper.load_external_data_for_model(proto, base_dir)
        except (OSError, ValueError) as e:
            raise ModelReadError(f"{source}: external weight data could not be loaded: {e}") from e
    return proto


def read_onnx(source: str | os.PathLike | bytes) -> Model:
    """Read an ONNX model from a path or from the file's bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return convert_model(load_proto(bytes(source), "<ONNX bytes>", None), "<ONNX bytes>")
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ModelReadError(f"Cannot read model file '{path}': {e.strerror or e}") from e
    return convert_model(load_proto(data, str(path), str(path.parent)), str(path))
