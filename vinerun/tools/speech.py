"""``vinerun speech``: OpenVINO's GNA speech sample — same flags, ark/npz files and error report.

    vinerun speech -m model.xml -i feats.ark -r scores.ark -d GNA_SW_EXACT -qb 16
    vinerun speech -m model.xml -i feats.npz -compare              # GNA_SW_EXACT i16/i8 vs GNA_SW_FP32
    vinerun speech -m model.xml -i feats.ark -d GNA_SW_EXACT -wg model.blob   # export, then -rg model.blob

Each utterance (a ``[frames, features]`` matrix) runs frame by frame (``-bs`` frames per inference)
with the request's state reset first; the scores go to ``-o`` and are compared with ``-r`` (max,
avg, RMS and stdev of ``ref - out``, :mod:`.speech_report`). Without ``-sf`` a GNA device gets the
sample's scale factor ``16384 / max|x|`` from the first utterance of each input. ``-compare`` runs
the model as ``GNA_SW_FP32`` (the reference), ``GNA_SW_EXACT`` i16 and ``GNA_SW_EXACT`` i8 on the same
input and prints the three error reports (i16 vs fp32, i8 vs fp32, i8 vs i16). See docs/gna.md.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vinerun.errors import InputError, NotSupportedError
from vinerun.ir.model import Model
from vinerun.runtime.compiled_model import CompiledModel
from vinerun.runtime.core import Core
from vinerun.tools.progress import ProgressBar
from vinerun.tools.speech_io import Utterances, read_utterances, write_utterances
from vinerun.tools.speech_report import ErrorStats, compare_scores

GNA_MODES = ("GNA_AUTO", "GNA_HW", "GNA_HW_WITH_SW_FBACK", "GNA_SW_EXACT", "GNA_SW_FP32", "GNA_SW")
TARGETS = ("GNA_TARGET_2_0", "GNA_TARGET_3_0", "GNA_TARGET_3_5")
FREQUENCY_MHZ = {"CORE": 400.0, "ATOM": 200.0}
MAX_SCALE_INPUT = 16384.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``speech`` (the speech sample's single-dash flags) on the ``vinerun`` command."""
    from vinerun.tools.benchmark import _Parser

    parser_class = sub._parser_class
    sub._parser_class = _Parser
    try:
        p = sub.add_parser("speech", help="run a speech model frame by frame (like OpenVINO's GNA speech sample)",
                           description="Score Kaldi ark / npz utterances frame by frame and compare with reference "
                                       "scores, with the GNA speech sample's flags.", allow_abbrev=False)
    finally:
        sub._parser_class = parser_class
    p.add_argument("-i", required=True, metavar="FILES", help="input utterances: file.ark, file.npz, "
                   "or name=file,... (one file per model input)")
    p.add_argument("-m", metavar="PATH", help="model file (.xml or .onnx)")
    p.add_argument("-rg", metavar="PATH", help="read a blob exported with -wg instead of -m")
    p.add_argument("-o", metavar="FILES", help="write the scores (.ark or .npz; comma list for several outputs)")
    p.add_argument("-r", metavar="FILES", help="reference scores to compare with (.ark or .npz)")
    p.add_argument("-d", default="CPU", metavar="DEVICE", help="CPU (default), GNA, GNA_AUTO, GNA_HW, "
                   "GNA_HW_WITH_SW_FBACK, GNA_SW_EXACT, GNA_SW_FP32, HETERO:GNA,CPU ...")
    p.add_argument("-pc", action="store_true", help="print the (estimated) GNA performance counters")
    p.add_argument("-a", choices=list(FREQUENCY_MHZ), default="CORE", help="GNA frequency for -pc: CORE 400 MHz, "
                   "ATOM 200 MHz")
    p.add_argument("-q", choices=["static", "user", "dynamic"], default="static",
                   help="scale factors: static (from the first utterance unless -sf) or user (-sf)")
    p.add_argument("-qb", type=int, choices=[8, 16], default=16, help="GNA weight precision in bits (default 16)")
    p.add_argument("-sf", metavar="SF", help="input scale factor(s): <sf> or name=sf,... (> 0)")
    p.add_argument("-bs", type=int, default=1, metavar="N", help="frames per inference, 1..8 (default 1)")
    p.add_argument("-cw_l", type=int, default=0, metavar="N", help="left context window frames (forces -bs 1)")
    p.add_argument("-cw_r", type=int, default=0, metavar="N", help="right context window frames (forces -bs 1)")
    p.add_argument("-layout", metavar="LAYOUT", help="input layout: NC / [N,C] (the only one the sample's "
                   "models have)")
    p.add_argument("-pwl_me", type=float, default=1.0, metavar="PCT", help="PWL max error percent (default 1.0)")
    p.add_argument("-exec_target", choices=TARGETS, help="GNA execution target")
    p.add_argument("-compile_target", choices=TARGETS, help="GNA compile target")
    p.add_argument("-memory_reuse_off", action="store_true", help="GNA_COMPACT_MODE off")
    p.add_argument("-wg", metavar="PATH", help="export the compiled model to PATH and exit")
    p.add_argument("-we", metavar="PATH", help="embedded export (not supported)")
    p.add_argument("-compare", action="store_true", help="run GNA_SW_FP32, GNA_SW_EXACT i16 and i8 on the "
                   "same input and print their errors")
    p.add_argument("-progress", action="store_true", help="show a progress bar (default: on a terminal)")
    p.set_defaults(func=run)


# --- configuration ---------------------------------------------------------------------------


def parse_scale_factors(text: str | None, names: list[str]) -> dict[str, float]:
    """``-sf``: ``"2048"`` (every input) or ``"name=2048,name2=1024"`` (or plain values in input order)."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for i, item in enumerate(text.split(",")):
        name, _, value = item.rpartition("=")
        if not name:
            if i >= len(names):
                raise InputError(f"-sf has {len(text.split(','))} values but the model has {len(names)} inputs")
            name = names[i]
        try:
            sf = float(value)
        except ValueError:
            raise InputError(f"-sf: '{value}' is not a number") from None
        if not sf > 0 or not np.isfinite(sf):
            raise InputError(f"-sf: the scale factor of '{name}' must be > 0 and finite, got {value}")
        if name not in names:
            raise InputError(f"-sf: '{name}' is not an input of the model (inputs: {', '.join(names)})")
        out[name] = sf
    if len(out) == 1 and len(names) > 1 and "=" not in text:
        out = {n: next(iter(out.values())) for n in names}
    return out


def sample_scale_factor(utterance: np.ndarray) -> float:
    """The sample's ``16384 / max|x|`` over an utterance (1.0 for an all-zero one)."""
    peak = float(np.abs(utterance).max()) if utterance.size else 0.0
    return MAX_SCALE_INPUT / peak if peak > 0 else 1.0


def device_and_config(args: argparse.Namespace, scale_factors: dict[str, float]) -> tuple[str, dict[str, Any]]:
    """``-d`` and the GNA flags -> (device name, compile config)."""
    gna: dict[str, Any] = {"INFERENCE_PRECISION_HINT": "i8" if args.qb == 8 else "i16",
                           "GNA_PWL_MAX_ERROR_PERCENT": args.pwl_me}
    if scale_factors:
        gna["GNA_SCALE_FACTOR_PER_INPUT"] = dict(scale_factors)
    if args.exec_target:
        gna["GNA_HW_EXECUTION_TARGET"] = args.exec_target
    if args.compile_target:
        gna["GNA_HW_COMPILE_TARGET"] = args.compile_target
    if args.memory_reuse_off:
        gna["GNA_COMPACT_MODE"] = False
    if args.pc:
        gna["PERF_COUNT"] = True
    device = args.d
    if device == "GNA" or device in GNA_MODES:
        if device != "GNA":
            gna["GNA_DEVICE_MODE"] = device
        return "GNA", gna
    if ":" in device and "GNA" in device:
        prefix, _, listed = device.partition(":")
        names = []
        for name in listed.split(","):
            if name in GNA_MODES or name == "GNA":
                gna["GNA_DEVICE_MODE"] = "GNA_AUTO" if name == "GNA" else name  # HETERO's GNA is GNA_AUTO
                name = "GNA"
            names.append(name)
        return f"{prefix}:{','.join(names)}", {"DEVICE_PROPERTIES": {"GNA": gna}}
    return device, ({"PERF_COUNT": True} if args.pc else {})


def port_name(port: Any) -> str:
    """A port's tensor name, else its producer's friendly name (a Result's input)."""
    names = sorted(port.get_names())
    if names:
        return names[0]
    node = port.get_node()
    if node.type_name == "Result":
        node = node.input_value(0).get_node()
    return node.friendly_name


def is_gna(device: str) -> bool:
    return "GNA" in device


# --- running ---------------------------------------------------------------------------------


@dataclass
class UtteranceRun:
    """Scores of one utterance (one ``[frames, scores]`` array per output) and its timing."""

    name: str
    scores: list[np.ndarray]
    seconds: float
    cycles: int = 0
    stall: int = 0
    frames: int = 0


def _input_files(text: str, names: list[str]) -> list[Utterances]:
    items = text.split(",")
    if len(items) != len(names):
        raise InputError(f"-i names {len(items)} file(s) but the model has {len(names)} input(s) "
                         f"({', '.join(names)}): give one file per input, as name=file,...")
    by_name: dict[str, str] = {}
    for i, item in enumerate(items):
        name, _, path = item.rpartition("=")
        by_name[name or names[i]] = path
    unknown = set(by_name) - set(names)
    if unknown:
        raise InputError(f"-i: {', '.join(sorted(unknown))} is not an input of the model (inputs: {', '.join(names)})")
    files = [read_utterances(by_name[n]) for n in names]
    keys = list(files[0])
    for n, f in zip(names, files, strict=True):
        if list(f) != keys:
            raise InputError(f"-i: the file of input '{n}' holds utterances {list(f)[:3]}..., expected the same "
                             f"utterances as the first file ({keys[:3]}...)")
    return files


def run_utterance(compiled: CompiledModel, name: str, inputs: list[np.ndarray], batch: int, delay: int,
                  progress: bool | None) -> UtteranceRun:
    """Score ``inputs`` (one ``[frames, features]`` array per model input) frame by frame.

    With a context window (``delay`` = cw_l + cw_r > 0) the last frame is repeated ``delay`` times and
    the first ``delay`` outputs are dropped, as the sample does.
    """
    request = compiled.create_infer_request()
    request.reset_state()
    frames = inputs[0].shape[0]
    steps = frames + delay
    shapes = [list(p.get_partial_shape().to_shape()) for p in compiled.inputs]
    outs: list[list[np.ndarray]] = [[] for _ in compiled.outputs]
    bar = ProgressBar(total=steps, enabled=progress or None, unit="frames")
    cycles = stall = 0
    start = time.perf_counter()
    for t in range(0, steps, batch):
        feed = []
        for x, shape in zip(inputs, shapes, strict=True):
            rows = x[[min(i, frames - 1) for i in range(t, min(t + batch, steps))]]
            if rows.shape[0] < batch:
                rows = np.concatenate([rows, np.zeros((batch - rows.shape[0], rows.shape[1]), rows.dtype)])
            feed.append(np.ascontiguousarray(rows.reshape(shape)))
        result = request.infer(feed)
        for k in range(len(outs)):
            outs[k].append(np.asarray(result[k], np.float32).reshape(batch, -1))
        for info in request.get_profiling_info():
            if info.node_name.startswith("1.1"):
                cycles += int(info.real_time.total_seconds() * 1e6)
            elif info.node_name.startswith("1.2"):
                stall += int(info.real_time.total_seconds() * 1e6)
        bar.update(min(t + batch, steps))
    seconds = time.perf_counter() - start
    bar.finish()
    scores = [np.concatenate(o)[delay:delay + frames] for o in outs]
    return UtteranceRun(name, scores, seconds, cycles, stall, frames)


def _check_args(args: argparse.Namespace) -> None:
    if args.q == "dynamic":
        raise NotSupportedError("-q dynamic is not supported (the GNA plugin rejects it): use static or user")
    if args.q == "user" and not args.sf:
        raise InputError("-q user needs the scale factors in -sf")
    if args.we:
        raise NotSupportedError("-we (embedded GNA firmware export) is not supported: there is no GNA firmware "
                                "format to write; use -wg")
    if bool(args.m) == bool(args.rg):
        raise InputError("give exactly one of -m (model) and -rg (exported blob)")
    if not 1 <= args.bs <= 8:
        raise InputError(f"-bs must be 1..8, got {args.bs}")
    if args.cw_l < 0 or args.cw_r < 0:
        raise InputError(f"-cw_l and -cw_r must be >= 0, got {args.cw_l} and {args.cw_r}")
    if args.layout and args.layout.strip("[]").replace(",", "").upper() != "NC":
        raise NotSupportedError(f"-layout {args.layout}: the speech tool takes [frames, features] inputs (NC) only")


def _read_model(core: Core, args: argparse.Namespace, batch: int) -> Model:
    model = core.read_model(args.m)
    if batch > 1:
        model.reshape({i: [batch, *list(p.get_partial_shape().to_shape())[1:]] for i, p in enumerate(model.inputs)})
    return model


def _print_utterance(index: int, run: UtteranceRun) -> None:
    per_frame = run.seconds * 1000 / max(run.frames, 1)
    print(f"\nUtterance {index}: {run.name}")
    print(f"Total time in Infer (HW and SW):\t{run.seconds * 1000:.2f} ms")
    print(f"Frames in utterance:\t\t\t{run.frames} frames")
    print(f"Average Infer time per frame:\t\t{per_frame:.4f} ms")


def _print_counters(run: UtteranceRun, mhz: float) -> None:
    print("Performance counts (an estimate from vinerun's GNA cost model, not measured):")
    print(f"   Total scoring cycles (estimate):\t{run.cycles}")
    print(f"   Stall scoring cycles (estimate):\t{run.stall}")
    per_frame = run.cycles / max(run.frames, 1)
    print(f"   Cycles per frame (estimate):\t\t{per_frame:.0f} ({per_frame / mhz:.2f} us per frame at {mhz:.0f} MHz)")


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    core = Core()
    batch = 1 if (args.cw_l or args.cw_r) else args.bs
    delay = args.cw_l + args.cw_r
    model = _read_model(core, args, batch) if args.m else None
    names = ([port_name(p) for p in model.inputs] if model is not None else None)
    if model is None:  # -rg: the blob's inputs
        mode = {"GNA_DEVICE_MODE": args.d} if args.d in GNA_MODES else {}   # the rest is the blob's
        compiled = core.import_model(Path(args.rg).read_bytes(), "GNA" if is_gna(args.d) else args.d, mode)
        names = [port_name(p) for p in compiled.inputs]
    files = _input_files(args.i, names)
    scale = parse_scale_factors(args.sf, names)
    if not scale and (is_gna(args.d) or args.compare) and model is not None:
        scale = {n: sample_scale_factor(next(iter(f.values()))) for n, f in zip(names, files, strict=True)}
        for n, s in scale.items():
            print(f"[ INFO ] Using scale factor of {s:.7f} calculated from the first utterance for input '{n}'")
    if args.compare:
        if model is None:
            raise InputError("-compare needs -m (it compiles the model three times)")
        return compare(core, model, args, files, scale)
    device, config = device_and_config(args, scale)
    if model is not None:
        compiled = core.compile_model(model, device, config)
    if args.wg:
        with open(args.wg, "wb") as f:
            compiled.export_model(f)
        print(f"[ INFO ] Exported the compiled model to {args.wg}")
        return 0
    output_names = [port_name(o) for o in (model.outputs if model is not None else compiled.outputs)]
    refs = _reference_files(args.r, len(output_names))
    written: list[dict[str, np.ndarray]] = [{} for _ in output_names]
    totals = [ErrorStats() for _ in output_names]
    for index, key in enumerate(files[0]):
        result = run_utterance(compiled, key, [f[key] for f in files], batch, delay, args.progress)
        _print_utterance(index, result)
        if args.pc:
            _print_counters(result, FREQUENCY_MHZ[args.a])
        for k, scores in enumerate(result.scores):
            written[k][key] = scores
            if refs:
                ref = _reference(refs[k], key, index)
                stats = compare_scores(ref, scores)
                totals[k].merge(stats)
                print(f"Output name: {output_names[k]}")
                print("\n".join(stats.lines()))
        print()
    if refs:
        print(f"Total over {len(files[0])} utterance(s):")
        for k, stats in enumerate(totals):
            print(f"Output name: {output_names[k]}")
            print("\n".join(stats.lines()))
    if args.o:
        for path, scores in zip(args.o.split(","), written, strict=False):
            write_utterances(path, scores)
            print(f"[ INFO ] Scores written to {path}")
    return 0


def _reference_files(text: str | None, outputs: int) -> list[Utterances]:
    if not text:
        return []
    paths = text.split(",")
    if len(paths) > outputs:
        raise InputError(f"-r names {len(paths)} files but the model has {outputs} output(s)")
    return [read_utterances(p) for p in paths]


def _reference(ref: Utterances, key: str, index: int) -> np.ndarray:
    if key in ref:
        return ref[key]
    keys = list(ref)
    if index < len(keys):  # the sample matches utterances by position
        return ref[keys[index]]
    raise InputError(f"the reference scores have no utterance '{key}' (nor a #{index}); they hold {len(keys)}")


# --- comparison mode -------------------------------------------------------------------------


@dataclass
class _Variant:
    label: str
    mode: str
    bits: int
    scores: dict[str, list[np.ndarray]] = field(default_factory=dict)


def compare(core: Core, model: Model, args: argparse.Namespace, files: list[Utterances],
            scale: dict[str, float]) -> int:
    """Run GNA_SW_FP32 (reference), GNA_SW_EXACT i16 and i8 on the same utterances; print the errors."""
    variants = [_Variant("GNA_SW_FP32", "GNA_SW_FP32", 16), _Variant("GNA_SW_EXACT i16", "GNA_SW_EXACT", 16),
                _Variant("GNA_SW_EXACT i8", "GNA_SW_EXACT", 8)]
    batch = 1 if (args.cw_l or args.cw_r) else args.bs
    for v in variants:
        vargs = argparse.Namespace(**{**vars(args), "d": v.mode, "qb": v.bits, "pc": False})
        device, config = device_and_config(vargs, scale)
        compiled = core.compile_model(model, device, config)
        for key in files[0]:
            result = run_utterance(compiled, key, [f[key] for f in files], batch, args.cw_l + args.cw_r,
                                   args.progress)
            v.scores[key] = result.scores
        print(f"[ INFO ] {v.label}: {len(files[0])} utterance(s) scored")
    pairs = [(variants[0], variants[1]), (variants[0], variants[2]), (variants[1], variants[2])]
    refs = _reference_files(args.r, len(variants[0].scores[next(iter(files[0]))]))
    totals = {(ref_label, out_label): ErrorStats() for ref_label, out_label in
              [(a.label, b.label) for a, b in pairs] + ([("-r file", v.label) for v in variants] if refs else [])}
    header = (f"{'reference':<18}{'output':<18}{'max error':>12}{'avg error':>12}{'avg rms error':>15}"
              f"{'stdev error':>13}")
    for index, key in enumerate(files[0]):
        print(f"Utterance {index}: {key} ({files[0][key].shape[0]} frames), e = reference - output")
        print(header)
        rows = [(a.label, b.label, a.scores[key][0], b.scores[key][0]) for a, b in pairs]
        if refs:
            ref = _reference(refs[0], key, index)
            rows += [("-r file", v.label, ref, v.scores[key][0]) for v in variants]
        for ref_label, out_label, ref, out in rows:
            s = compare_scores(ref, out)
            totals[(ref_label, out_label)].merge(s)
            print(_row(ref_label, out_label, s))
        print()
    print(f"Total over {len(files[0])} utterance(s), first output:")
    print(header)
    for (ref_label, out_label), s in totals.items():
        print(_row(ref_label, out_label, s))
    return 0


def _row(ref_label: str, out_label: str, s: ErrorStats) -> str:
    return (f"{ref_label:<18}{out_label:<18}{s.max_error:>12.7f}{s.avg_error:>12.7f}{s.rms_error:>15.7f}"
            f"{s.stdev_error:>13.7f}")
