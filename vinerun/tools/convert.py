"""``vinerun convert``: an ONNX (or IR) model to OpenVINO IR ``.xml`` + ``.bin`` (OpenVINO's ``ovc``).

    vinerun convert model.onnx                                  # ./model.xml + model.bin, weights in f16
    vinerun convert model.onnx --output_model ir/model.xml --compress_to_fp16 False --input "x[1,3,224,224]"

openvino reads the result too (``ov.Core().read_model("model.xml")``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from vinerun.errors import VinerunError
from vinerun.tools import benchmark_config as cfg


class ConvertArgumentError(VinerunError, ValueError):
    """A convert flag has a value that cannot be used; the message names the flag."""


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"expected True or False, got '{text}'")
    return value in ("true", "1")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert a model to OpenVINO IR .xml/.bin (like ovc)",
                       description="Convert an ONNX model (or re-save an IR) as OpenVINO IR: model.xml + model.bin.")
    p.add_argument("input_model", help="the model file: .onnx or .xml")
    p.add_argument("--output_model", metavar="PATH", help="the .xml to write (default: ./<input name>.xml); "
                                                          "a folder gets <input name>.xml inside it")
    p.add_argument("--compress_to_fp16", type=_bool, default=True, metavar="{True,False}",
                   help="store float weights as f16, decompressed when the model is read (default: True, as ovc)")
    p.add_argument("--input", metavar="SHAPES", help="static or partial input shapes: \"x[1,3,224,224],y[?,16]\" "
                                                     "or \"[1,3,224,224]\" for a single input")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vinerun.runtime.core import Core
    from vinerun.runtime.model_io import save_model

    start = time.perf_counter()
    model = Core().read_model(args.input_model)
    if args.input:
        inputs = model.inputs
        model.reshape({i: cfg.parse_partial_shape(v[0], "--input", inputs[i].get_any_name())
                       for i, v in cfg.assign_to_inputs(cfg.parse_input_map(args.input, "--input"), inputs,
                                                        "--input").items()})
    out = output_path(args.input_model, args.output_model)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        save_model(model, out, compress_to_fp16=args.compress_to_fp16)
    except OSError as e:
        raise ConvertArgumentError(f"--output_model: cannot write {out}: {e.strerror}") from None
    weights = out.with_suffix(".bin")
    size = weights.stat().st_size if weights.exists() else 0
    print(f"vinerun convert: {args.input_model} -> {out} + {weights.name} ({size:,} bytes of weights) "
          f"in {time.perf_counter() - start:.2f} s")
    return 0


def output_path(input_model: str, output_model: str | None) -> Path:
    """ovc's rule: no --output_model writes ./<stem>.xml; a folder gets <stem>.xml; a name gets .xml added."""
    stem = Path(input_model).stem
    if not output_model:
        return Path.cwd() / f"{stem}.xml"
    out = Path(output_model)
    if out.is_dir() or output_model.endswith(("/", "\\")):
        return out / f"{stem}.xml"
    return out if out.suffix == ".xml" else out.with_name(out.name + ".xml")
