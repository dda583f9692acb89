"""``vinerun compile``: compile a model for a device and write the blob (OpenVINO's compile_tool).

    vinerun compile -m model.onnx -d CPU -o model.blob
    vinerun compile -m model.xml -d GNA -c gna.conf -ip u8 -il NHWC -iml NCHW

The blob is ``CompiledModel.export_model()``'s output; ``Core.import_model(blob, device)`` (or
``vinerun benchmark -m model.blob``) loads it without compiling again.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from vinerun.errors import VinerunError
from vinerun.ir.layout import Layout
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.tools import benchmark_config as cfg


class CompileArgumentError(VinerunError, ValueError):
    """A compile flag has a value that cannot be used; the message names the flag."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compile", help="compile a model for a device and write the blob (like compile_tool)",
                       description="Compile a model for a device and export it as a blob that "
                                   "Core.import_model() loads without compiling again.")
    p.add_argument("-m", required=True, metavar="MODEL", help="model file: .onnx or OpenVINO IR .xml")
    p.add_argument("-d", required=True, metavar="DEVICE", help="target device, e.g. CPU, GNA, BATCH:CPU(4)")
    p.add_argument("-o", metavar="BLOB", help="output file (default: the model's name with .blob)")
    p.add_argument("-c", metavar="CONFIG", help="device properties: a file of 'KEY VALUE' lines (compile_tool's "
                                                "format) or a JSON object {\"KEY\": value}")
    p.add_argument("-shape", metavar="SHAPES", help="reshape before compiling: \"x[1,3,224,224]\" or \"[1,3,224,224]\"")
    p.add_argument("-ip", metavar="TYPE", help="element type of every input tensor (u8, f16, f32, ...)")
    p.add_argument("-op", metavar="TYPE", help="element type of every output tensor")
    p.add_argument("-iop", metavar="TYPES", help="element types per input/output: \"x:u8,logits:f16\"")
    p.add_argument("-il", metavar="LAYOUT", help="layout of the input tensors the caller sends: \"NHWC\" or "
                                                "\"x[NHWC]\" (the model's layout comes from -iml)")
    p.add_argument("-iml", metavar="LAYOUT", help="the model's own input layout: \"NCHW\" or \"x[NCHW]\"")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vinerun.preprocess import PrePostProcessor
    from vinerun.runtime.core import Core

    core = Core()
    config = read_config(args.c) if args.c else {}
    start = time.perf_counter()
    model = core.read_model(args.m)
    _reshape(model, args.shape)
    if any((args.ip, args.op, args.iop, args.il, args.iml)):
        ppp = PrePostProcessor(model)
        _set_types(ppp, model, args)
        _set_layouts(ppp, model, args)
        model = ppp.build()
    compiled = core.compile_model(model, args.d, config)
    exported = compiled.export_model()
    blob = exported.getvalue() if hasattr(exported, "getvalue") else bytes(exported)
    out = Path(args.o) if args.o else Path(args.m).with_suffix(".blob")
    try:
        out.write_bytes(blob)
    except OSError as e:
        raise CompileArgumentError(f"-o: cannot write {out}: {e.strerror}") from None
    print(f"vinerun compile: {args.m} for {args.d} in {time.perf_counter() - start:.2f} s -> {out} "
          f"({len(blob):,} bytes)")
    return 0


def read_config(path: str) -> dict[str, Any]:
    """``KEY VALUE`` lines (``#`` comments) or a JSON object."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise CompileArgumentError(f"-c: cannot read the config file {path}: {e.strerror}") from None
    if text.lstrip().startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise CompileArgumentError(f"-c: {path} is not valid JSON: {e}") from None
        if not isinstance(value, dict):
            raise CompileArgumentError(f"-c: {path} must hold a JSON object of property keys to values")
        return value
    config: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, value = line.partition(" ")
        if not value.strip():
            raise CompileArgumentError(f"-c: {path} line {number}: expected 'KEY VALUE', got '{line}'")
        config[key] = value.strip()
    return config


def _reshape(model: Model, text: str | None) -> None:
    if not text:
        return
    inputs = model.inputs
    shapes = {}
    for i, values in cfg.assign_to_inputs(cfg.parse_input_map(text), inputs, "-shape").items():
        shapes[i] = cfg.parse_partial_shape(values[0], "-shape", inputs[i].get_any_name())
    model.reshape(shapes)


def _element_type(text: str, flag: str) -> Type:
    try:
        return Type(text.strip().lower())
    except (ValueError, KeyError, TypeError):
        raise CompileArgumentError(f"{flag}: unknown element type '{text}' (use u8, i8, u16, i16, i32, i64, "
                                   "f16, bf16, f32, f64)") from None


def _by_port(text: str, flag: str, model: Model) -> dict[tuple[str, int], str]:
    """``"x:u8,logits:f16"`` -> {("in", index) or ("out", index): value}, names matched to inputs, then outputs."""
    out: dict[tuple[str, int], str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = item.rpartition(":")
        if not sep or not name:
            raise CompileArgumentError(f"{flag}: expected 'name:value' items, got '{item}'")
        for kind, ports in (("in", model.inputs), ("out", model.outputs)):
            index = next((i for i, p in enumerate(ports) if name in p.get_names()), None)
            if index is not None:
                out[(kind, index)] = value
                break
        else:
            names = [n for p in [*model.inputs, *model.outputs] for n in sorted(p.get_names())]
            raise CompileArgumentError(f"{flag}: the model has no input or output named '{name}'. "
                                       f"Names: {', '.join(names)}")
    return out


def _set_types(ppp: Any, model: Model, args: argparse.Namespace) -> None:
    """-ip / -op for every input / output, then -iop per name (it wins)."""
    wanted: dict[tuple[str, int], tuple[str, str]] = {}
    if args.ip:
        wanted.update({("in", i): (args.ip, "-ip") for i in range(len(model.inputs))})
    if args.op:
        wanted.update({("out", i): (args.op, "-op") for i in range(len(model.outputs))})
    if args.iop:
        wanted.update({port: (text, "-iop") for port, text in _by_port(args.iop, "-iop", model).items()})
    for (kind, index), (text, flag) in wanted.items():
        port = ppp.input(index) if kind == "in" else ppp.output(index)
        port.tensor().set_element_type(_element_type(text, flag))


def _layouts(text: str | None, flag: str, model: Model) -> dict[int, Layout]:
    if not text:
        return {}
    if "[" not in text:
        text = f"[{text}]"
    try:
        return {i: Layout(v[0]) for i, v in
                cfg.assign_to_inputs(cfg.parse_input_map(text, flag), model.inputs, flag).items()}
    except ValueError as e:
        raise CompileArgumentError(f"{flag}: {e}") from None


def _set_layouts(ppp: Any, model: Model, args: argparse.Namespace) -> None:
    for i, layout in _layouts(args.il, "-il", model).items():
        ppp.input(i).tensor().set_layout(layout)
    for i, layout in _layouts(args.iml, "-iml", model).items():
        ppp.input(i).model().set_layout(layout)
