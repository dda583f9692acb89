"""Reading and saving models: format detection for ONNX and OpenVINO IR."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from vinerun.errors import ModelReadError
from vinerun.ir.model import Model


def read_model(model: Any, weights: Any = None) -> Model:
    """Read ONNX (``.onnx`` or bytes) or OpenVINO IR (``.xml`` + ``.bin``, or xml bytes + weights)."""
    if isinstance(model, io.IOBase):
        model = model.read()
    if isinstance(weights, io.IOBase):
        weights = weights.read()
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        if data.lstrip()[:1] == b"<":
            from vinerun.frontends.openvino_ir import read_ir

            return read_ir(data, weights)
        from vinerun.frontends.onnx import read_onnx

        return read_onnx(data)
    if isinstance(model, str) and model.lstrip().startswith("<?xml"):
        from vinerun.frontends.openvino_ir import read_ir

        return read_ir(model.encode(), weights)
    if not isinstance(model, (str, os.PathLike)):
        raise ModelReadError(f"read_model takes a path, bytes or a file object, not {type(model).__name__}")
    path = Path(model)
    if not path.exists():
        raise ModelReadError(f"Model file '{path}' does not exist")
    suffix = path.suffix.lower()
    if suffix == ".xml":
        from vinerun.frontends.openvino_ir import read_ir

        return read_ir(path, weights)
    if suffix == ".onnx" or suffix == "":
        from vinerun.frontends.onnx import read_onnx

        return read_onnx(path)
    head = path.open("rb").read(64)
    if head.lstrip().startswith(b"<"):
        from vinerun.frontends.openvino_ir import read_ir

        return read_ir(path, weights)
    if suffix in (".pb", ".tflite", ".pdmodel", ".pt", ".pth"):
        raise ModelReadError(f"'{path}': {suffix} models are not supported; vinerun reads ONNX (.onnx) and "
                             "OpenVINO IR (.xml + .bin)")
    from vinerun.frontends.onnx import read_onnx

    return read_onnx(path)


def save_model(model: Model, output_model: str | os.PathLike, compress_to_fp16: bool = True) -> None:
    """Save as OpenVINO IR v11 (``.xml`` + ``.bin`` beside it); weights in f16 unless told not to."""
    from vinerun.frontends.openvino_ir import write_ir

    path = Path(output_model)
    if path.suffix.lower() != ".xml":
        raise ValueError(f"save_model writes OpenVINO IR: the path must end in .xml, got '{path}'")
    write_ir(model, path, path.with_suffix(".bin"), compress_to_fp16=compress_to_fp16)


def serialize(model: Model, xml_path: str | os.PathLike, bin_path: str | os.PathLike | None = None,
              version: Any = None) -> None:
    """Save as OpenVINO IR without weight compression (OpenVINO's ``serialize``)."""
    from vinerun.frontends.openvino_ir import write_ir

    xml = Path(xml_path)
    write_ir(model, xml, Path(bin_path) if bin_path else xml.with_suffix(".bin"), compress_to_fp16=False)
