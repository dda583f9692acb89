"""vinerun vs openvino vs onnxruntime on the same model files, same inputs, in one run.

For each model (``model_zoo.MODELS``) and each contender (``contenders.available``):

- compile: fresh Core (or session) + read + compile under the LATENCY hint + the first inference, median of
  ``--compile-reps`` after one untimed warm-up, the contenders interleaved rep by rep;
- latency: one request, ``infer`` in a loop, LATENCY hint (1 stream), after one untimed turn (one-off costs such
  as vinerun's plan for a repeated dynamic shape stay out of the figures); the median over ``--rounds``
  turns of each turn's median call time (turns of ``--seconds`` each, the contenders interleaved
  turn by turn, so a busy moment of the shared machine hits every contender alike); the JSON also
  keeps the median of all calls pooled;
- FPS: THROUGHPUT hint, ``OPTIMAL_NUMBER_OF_INFER_REQUESTS`` requests in flight (onnxruntime: one
  single-threaded session per core from a thread pool); median over the same interleaved rounds;
- peak memory: peak-RSS (``VmHWM``) growth of a child process per contender across read + compile + 5
  inferences (the child's baseline is taken after importing the runtime and making the inputs);
- agreement: max |output - openvino f32 output| on the same feed (one call from the initial state);
  onnxruntime's output where openvino cannot run the model (marked "vs ort").

Every timed turn starts after a garbage collection (a full one over the Python objects the compiled models left
took ~1 s when it fell inside a turn) and ``--settle`` seconds of quiet (0.2 s): a runtime's idle worker threads keep
spinning for a while after its turn (onnxruntime's intra-op pool, 50-100 ms measured), and the next contender
would pay for it (measured: MobileNetV2 THROUGHPUT right after onnxruntime's latency turn 270 FPS, 284 after a
0.1-0.2 s pause).

Stateful models (silero-vad, the KV-cache decoder) feed their state outputs back into the next call in the latency
loop, continuing across turns (a decoder restarts from its first step every ``cycle`` calls); in the FPS loop
every request runs the initial state (independent streams).

Quantized models (``int8_models.INT8_MODELS``: ``resnet50-int8`` ... ``resnet50-nncf``; named with ``--models``,
not in the default set) get their own contenders and table: "vinerun int8" / "openvino int8" (no precision hint:
each runtime's default execution of the quantized file; openvino's is the anchor), "onnxruntime int8" (ONNX
files) and "vinerun f32 (f32 model)" (vinerun f32 on the f32 file the model was quantized from: Must-show 1 wants
int8 >= 3x faster). Their agreement columns compare with openvino int8 over 8 held-out inputs: max |diff|, the
same in quantization steps of the output, and top-1 agreement for the classifiers.

    python benchmarks/compare.py --models resnet50 bert --seconds 0.5 --rounds 7 --json out.json
    python benchmarks/compare.py --quick           # smoke test: 1 round, short turns, no memory
    python benchmarks/compare.py --models resnet50-int8 mobilenetv2-int8 bert-int8 resnet50-nncf --folder /tmp/zoo
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contenders import Contender, Feed, available, by_name, int8_contenders, native_bf16  # noqa: E402
from int8_models import INT8_MODELS, Int8Spec, agreement  # noqa: E402
from model_zoo import MODELS, ModelSpec  # noqa: E402


def all_models() -> dict[str, ModelSpec]:
    """``model_zoo.MODELS`` (f32) and ``int8_models.INT8_MODELS``, looked up when asked (tests add models)."""
    return {**MODELS, **INT8_MODELS}


# the agreement reference: the first that ran (int8 rows: openvino's default int8 execution of the same file)
REFERENCES = ("openvino int8", "openvino f32", "onnxruntime f32", "onnxruntime int8")


@dataclass
class Row:
    """One contender's figures on one model (``None``: not measured)."""

    model: str
    contender: str
    compile_ms: float | None = None
    latency_ms: float | None = None
    latency_pooled_ms: float | None = None  # median of every call of every turn (fast turns weigh more)
    latency_turns_ms: list[float] = field(default_factory=list)  # each turn's median
    fps: float | None = None
    fps_turns: list[float] = field(default_factory=list)
    peak_rss_mb: float | None = None
    rss_growth_mb: float | None = None
    max_abs_diff: float | None = None
    reference: str | None = None  # what max_abs_diff compares with
    relative_diff: float | None = None  # the largest of each output's max |diff| / max |reference output|
    error: str | None = None
    int8: bool = False  # a row of a quantized model (int8_models.py): the int8 table
    output_steps: float | None = None  # int8 rows: max_abs_diff in quantization steps of the output
    top1: str | None = None  # int8 classifiers: top-1 agreement with the reference over the held-out inputs


def log(message: str) -> None:
    print(f"[compare {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def one_line(exc: BaseException) -> str:
    """An error as one short table cell: its type and the most telling line (openvino's last lines
    name the op that failed)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    telling = next((line for line in reversed(lines) if "failed for" in line.lower()), lines[0] if lines else "")
    return f"{type(exc).__name__}: {telling}"[:160].replace("|", "/")


def compile_times(contenders: list[Contender], path: str, reps: int, feed: Feed) -> dict[str, float | Exception]:
    """Median seconds of read + compile (LATENCY hint) + the first inference per contender, each from a fresh
    Core/session; one untimed warm-up first (a process's first compile also pays lazy imports and, on a VM, memory
    the guest never touched), then the contenders interleaved rep by rep. A contender that fails gets its
    exception."""
    times: dict[str, list[float]] = {c.name: [] for c in contenders}
    failed: dict[str, Exception] = {}
    for rep in range(reps + 1):
        for c in contenders:
            if c.name in failed:
                continue
            t0 = time.perf_counter()
            try:
                c.sync(c.compile(path, "LATENCY"))(dict(feed))
            except Exception as exc:  # noqa: BLE001 - reported in the table
                failed[c.name] = exc
                continue
            if rep:
                times[c.name].append(time.perf_counter() - t0)
    return {name: failed.get(name) or statistics.median(t) for name, t in times.items()}


class Steps:
    """The feeds of one contender's successive calls: ``feed`` every time or, with ``feedback``, each call's named
    outputs copied into the next call's inputs (one step of a stateful model per call), starting again from
    ``feed`` every ``cycle`` calls (a KV cache stays bounded). A turn continues where the last one stopped, so a
    decoder's cache keeps growing across turns as in real decoding."""

    def __init__(self, feed: Feed, feedback: dict[int, str], cycle: int = 0) -> None:
        self.first, self.feed, self.feedback, self.cycle, self.calls = feed, dict(feed), feedback, cycle, 0

    def after(self, outputs: list[np.ndarray]) -> None:
        """Take a call's outputs: the next call's feed."""
        self.calls += 1
        if self.cycle and self.calls % self.cycle == 0:
            self.feed = dict(self.first)
            return
        for index, name in self.feedback.items():
            self.feed[name] = np.array(outputs[index], copy=True)


def latency_turn(run: Any, steps: Steps, seconds: float) -> list[float]:
    """Calls ``run`` on the feeds of ``steps`` for ``seconds`` (at least once); returns each call's seconds."""
    times: list[float] = []
    end = time.perf_counter() + seconds
    while not times or time.perf_counter() < end:
        t0 = time.perf_counter()
        outputs = run(steps.feed)
        times.append(time.perf_counter() - t0)
        steps.after(outputs)
    return times


def max_abs_diff(outputs: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """The largest |difference| over all outputs (infinite where an output's shape differs)."""
    return max(_output_diff(a, b)[0] for a, b in zip(outputs, reference, strict=True))


def relative_diff(outputs: list[np.ndarray], reference: list[np.ndarray]) -> float:
    """The largest over the outputs of max |difference| / max |reference output| (each output on its own scale)."""
    return max(diff / max(scale, 1e-12) for diff, scale in map(_output_diff, outputs, reference))


def _output_diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf"), 1.0
    if a.size == 0:
        return 0.0, 0.0
    return float(np.max(np.abs(a - b))), float(np.max(np.abs(b)))


def measure_model(spec: ModelSpec, path: str, contenders: list[Contender], seconds: float, rounds: int,
                  compile_reps: int, memory: bool = True, settle: float = 0.0) -> list[Row]:
    """Every figure of every contender on one model; the timed turns are interleaved (A B C A B C ...)."""
    feed = spec.inputs()
    rows = {c.name: Row(spec.name, c.name, int8=isinstance(spec, Int8Spec)) for c in contenders}
    sync, tput, outputs = {}, {}, {}
    log(f"{spec.name}: compile x{compile_reps} (+1 warm-up), contenders interleaved")
    compiled = compile_times(contenders, path, compile_reps, feed)
    for c in contenders:
        row = rows[c.name]
        try:
            if isinstance(compiled[c.name], Exception):
                raise compiled[c.name]
            row.compile_ms = 1e3 * compiled[c.name]
            log(f"{spec.name}: {c.name}: compile LATENCY + THROUGHPUT, warm-up")
            sync[c.name] = c.sync(c.compile(path, "LATENCY"))
            outputs[c.name] = [np.array(o, copy=True) for o in sync[c.name](dict(feed))]
            tput[c.name] = c.throughput(c.compile(path, "THROUGHPUT"), feed)
        except Exception as exc:  # a runtime that cannot run this model: say so in the table, go on
            row.error = one_line(exc)
            log(f"{spec.name}: {c.name}: FAILED {row.error}")
            sync.pop(c.name, None)
    reference = next((name for name in REFERENCES if name in outputs), None)
    for name, out in outputs.items():
        rows[name].max_abs_diff = None if reference is None else max_abs_diff(out, outputs[reference])
        rows[name].relative_diff = None if reference is None else relative_diff(out, outputs[reference])
        rows[name].reference = reference
    if isinstance(spec, Int8Spec) and reference is not None:
        log(f"{spec.name}: accuracy over {len(spec.samples())} held-out inputs vs {reference}")
        for name, agree in agreement(spec, path, sync, reference).items():
            row = rows[name]
            row.max_abs_diff, row.output_steps, row.top1 = agree.max_abs_diff, agree.steps, agree.top1
    lat: dict[str, list[float]] = {name: [] for name in sync}
    steps = {name: Steps(feed, spec.feedback, spec.cycle) for name in sync}
    for name in tput:  # an untimed turn first: one-off costs (a plan compiled for a repeated shape) stay out
        steps[name].after(outputs[name])  # the accuracy call above was the first step
        latency_turn(sync[name], steps[name], seconds)
    for r in range(rounds):
        for name in tput:
            gc.collect()
            time.sleep(settle)
            turn = latency_turn(sync[name], steps[name], seconds)
            lat[name] += turn
            rows[name].latency_turns_ms.append(1e3 * statistics.median(turn))
        for name, run in tput.items():
            gc.collect()
            time.sleep(settle)
            t0 = time.perf_counter()
            frames = run(seconds)
            rows[name].fps_turns.append(frames / (time.perf_counter() - t0))
        log(f"{spec.name}: round {r + 1}/{rounds}: " + ", ".join(
            f"{n} {_ms(rows[n].latency_turns_ms[-1])} ms / {rows[n].fps_turns[-1]:.1f} FPS" for n in tput))
    for name in tput:
        rows[name].latency_ms = statistics.median(rows[name].latency_turns_ms)
        rows[name].latency_pooled_ms = 1e3 * statistics.median(lat[name])
        rows[name].fps = statistics.median(rows[name].fps_turns)
    del sync, tput
    if memory:
        for c in contenders:
            if rows[c.name].error is None:
                log(f"{spec.name}: {c.name}: peak memory (child process)")
                rows[c.name].peak_rss_mb, rows[c.name].rss_growth_mb = memory_in_child(c.name, feed,
                                                                                       getattr(c, "path", path))
    return list(rows.values())


def memory_in_child(contender: str, feed: Feed, path: str) -> tuple[float | None, float | None]:
    """(peak RSS MB, its growth over read + compile + 5 inferences) measured in a fresh interpreter."""
    with tempfile.TemporaryDirectory() as folder:
        inputs = os.path.join(folder, "inputs.npz")
        np.savez(inputs, **feed)
        cmd = [sys.executable, os.path.abspath(__file__), "--memory-child", contender, inputs, path]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        log(f"{contender}: memory child failed: {done.stderr.strip()[-300:]}")
        return None, None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["peak_mb"], result["peak_mb"] - result["base_mb"]


def peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM``, which starts afresh at exec (``ru_maxrss`` does not: a
    child keeps its parent's high-water mark across fork + exec on Linux)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def memory_child(contender: str, inputs: str, path: str) -> int:
    """The child's side of ``memory_in_child``: prints {"base_mb", "peak_mb"} as JSON."""
    c = by_name(contender)
    __import__(c.runtime)
    with np.load(inputs) as saved:
        feed = {name: saved[name] for name in saved.files}
    base = peak_rss_mb()
    run = c.sync(c.compile(path, "LATENCY"))
    for _ in range(5):
        run(dict(feed))
    peak = peak_rss_mb()
    print(json.dumps({"base_mb": base, "peak_mb": peak}))
    return 0


def _ms(value: float | None) -> str:
    """A latency with three significant digits (0.0745, 4.28, 39.3): two decimals hid silero-vad's 10 %."""
    return "—" if value is None else f"{value:.3g}" if value < 100 else f"{value:.0f}"


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def _ratio(a: float | None, b: float | None) -> str:
    return _fmt(_ratio_value(a, b), ".2f")


def table(rows: list[Row]) -> str:
    """The figures as a Markdown table, then the ratios vinerun / openvino and vinerun / onnxruntime; the int8
    rows in their own tables (:func:`int8_table`)."""
    int8 = [r for r in rows if r.int8]
    rows = [r for r in rows if not r.int8]
    if not rows:
        return int8_table(int8)
    lines = ["| model | runtime | compile + 1st ms | latency ms (median) | FPS (THROUGHPUT) | peak RSS MB (growth) "
             "| max abs diff vs openvino f32 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.error:
            lines.append(f"| {r.model} | {r.contender} | failed: {r.error} | | | | |")
            continue
        other = " vs ort" if r.reference == "onnxruntime f32" and r.max_abs_diff is not None else ""
        mem = "—" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.0f} ({r.rss_growth_mb:+.0f})"
        lines.append(f"| {r.model} | {r.contender} | {_fmt(r.compile_ms, '.0f')} | {_ms(r.latency_ms)} "
                     f"| {_fmt(r.fps, '.1f')} | {mem} | {_fmt(r.max_abs_diff, '.2e')}{other} |")
    lines += ratio_lines(rows, (("vinerun f32", "openvino f32"), ("vinerun bf16", "openvino bf16"),
                                ("vinerun f32", "onnxruntime f32")))
    return "\n".join(lines) + ("\n\n" + int8_table(int8) if int8 else "")


def ratio_lines(rows: list[Row], pairs: tuple[tuple[str, str], ...]) -> list[str]:
    """The ratio table: per model, each (ours, theirs) pair both measured."""
    lines = ["", "| model | vs | compile ratio | latency ratio (lower is better) | FPS ratio (higher is better) "
             "| peak RSS ratio |", "|---|---|---|---|---|---|"]
    index = {(r.model, r.contender): r for r in rows}
    for model in dict.fromkeys(r.model for r in rows):
        for ours, theirs in pairs:
            a, b = index.get((model, ours)), index.get((model, theirs))
            if a is None or b is None:
                continue
            lines.append(f"| {model} | {ours} / {theirs} | {_ratio(a.compile_ms, b.compile_ms)} "
                         f"| {_ratio(a.latency_ms, b.latency_ms)} | {_ratio(a.fps, b.fps)} "
                         f"| {_ratio(a.peak_rss_mb, b.peak_rss_mb)} |")
    return lines


INT8_PAIRS = (("vinerun int8", "openvino int8"), ("vinerun int8", "onnxruntime int8"),
              ("vinerun int8", "vinerun f32 (f32 model)"))


def int8_table(rows: list[Row]) -> str:
    """The quantized models: every contender's figures with its agreement with openvino's int8 outputs of the same
    file (max |diff| over the held-out inputs, the same in output quantization steps, top-1 agreement), then the
    ratios vinerun int8 / openvino int8, / onnxruntime int8 and / vinerun's own f32 on the f32 model (Must-show 1
    asks that last latency ratio to be <= 0.33)."""
    lines = ["| model | runtime | compile ms | latency ms (median) | FPS (THROUGHPUT) | peak RSS MB (growth) "
             "| max abs diff vs openvino int8 | in output steps | top-1 agree |", "|---" * 9 + "|"]
    for r in rows:
        if r.error:
            lines.append(f"| {r.model} | {r.contender} | failed: {r.error} | | | | | | |")
            continue
        other = f" vs {r.reference}" if r.reference not in (None, "openvino int8") else ""
        mem = "—" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.0f} ({r.rss_growth_mb:+.0f})"
        lines.append(f"| {r.model} | {r.contender} | {_fmt(r.compile_ms, '.0f')} | {_ms(r.latency_ms)} "
                     f"| {_fmt(r.fps, '.1f')} | {mem} | {_fmt(r.max_abs_diff, '.2e')}{other} "
                     f"| {_fmt(r.output_steps, '.2f')} | {r.top1 or '—'} |")
    return "\n".join(lines + ratio_lines(rows, INT8_PAIRS))


#: f32 agreement: max |vinerun - openvino f32| within this fraction of the reference output's largest magnitude
#: (accumulation order and fused kernels differ; measured at most ~1e-5 on the zoo's convolutional models)
F32_TOLERANCE = 1e-3
#: bf16 agreement with openvino f32 (docs/properties.md, ``vinerun.plugins.cpu.precision.BF16_TOLERANCE``)
BF16_TOLERANCE = 2 ** -5
ZOO_BEGIN, ZOO_END = "<!-- zoo:begin (compare.py --readme writes this part) -->", "<!-- zoo:end -->"


def _geomean(values: list[float]) -> float | None:
    return float(np.exp(np.mean(np.log(values)))) if values else None


def zoo_summary(rows: list[Row]) -> str:
    """Issue 17's table: per model, vinerun / openvino for f32 and bf16 latency, THROUGHPUT FPS and compile (read +
    compile + first inference is compile here plus one call), and whether outputs agree with openvino f32 (f32
    within ``F32_TOLERANCE``, bf16 within ``BF16_TOLERANCE`` of the reference's largest magnitude); then the
    geometric means and the worst model of each column."""
    index = {(r.model, r.contender): r for r in rows if not r.int8}
    columns = {"f32 latency": ("latency_ms", "f32", False), "bf16 latency": ("latency_ms", "bf16", False),
               "f32 FPS": ("fps", "f32", True), "bf16 FPS": ("fps", "bf16", True),
               "compile": ("compile_ms", "f32", False)}
    ratios: dict[str, dict[str, float]] = {c: {} for c in columns}
    lines = ["| model | " + " | ".join(columns) + " | agrees with openvino f32 (f32, bf16 [openvino bf16's own]) |",
             "|---" * (len(columns) + 2) + "|"]
    for model in dict.fromkeys(m for m, _ in index):
        cells = []
        for column, (attr, precision, _) in columns.items():
            a, b = index.get((model, f"vinerun {precision}")), index.get((model, f"openvino {precision}"))
            value = None if a is None or b is None else _ratio_value(getattr(a, attr), getattr(b, attr))
            if value is not None:
                ratios[column][model] = value
            cells.append(_fmt(value, ".2f"))
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {_agreement(index, model)} |")
    lines.append("| **geometric mean** | " + " | ".join(_fmt(_geomean(list(r.values())), ".2f")
                                                       for r in ratios.values()) + " | |")
    worst = []
    for column, (_, _, higher_better) in columns.items():
        if ratios[column]:
            pick = (min if higher_better else max)(ratios[column].items(), key=lambda kv: kv[1])
            worst.append(f"{pick[1]:.2f} ({pick[0]})")
        else:
            worst.append("—")
    lines.append("| **worst** | " + " | ".join(worst) + " | |")
    return "\n".join(lines)


def _ratio_value(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _agreement(index: dict[tuple[str, str], Row], model: str) -> str:
    """"yes"/"NO" per precision, with the largest difference as a fraction of the reference's magnitude; for bf16
    also openvino bf16's own (a network whose outputs bf16 moves more than the tolerance moves there too)."""
    cells = []
    for precision, tolerance in (("f32", F32_TOLERANCE), ("bf16", BF16_TOLERANCE)):
        row = index.get((model, f"vinerun {precision}"))
        if row is None or row.relative_diff is None or row.reference != "openvino f32":
            cells.append("—" if row is None or row.error is None else "failed")
            continue
        share = row.relative_diff
        cell = f"{'yes' if share <= tolerance else 'NO'} ({share:.1e})"
        theirs = index.get((model, f"openvino {precision}"))
        if precision == "bf16" and theirs is not None and theirs.relative_diff is not None:
            cell += f" [openvino {theirs.relative_diff:.1e}]"
        cells.append(cell)
    return ", ".join(cells)


def write_readme_section(text: str, readme: str) -> None:
    """Replaces the part of ``readme`` between ``ZOO_BEGIN`` and ``ZOO_END`` with ``text`` (appends both markers
    and the text when the file has none)."""
    with open(readme) as f:
        content = f.read()
    block = f"{ZOO_BEGIN}\n{text}\n{ZOO_END}"
    if ZOO_BEGIN in content and ZOO_END in content:
        head, rest = content.split(ZOO_BEGIN, 1)
        content = head + block + rest.split(ZOO_END, 1)[1]
    else:
        content = content.rstrip("\n") + "\n\n" + block + "\n"
    with open(readme, "w") as f:
        f.write(content)


def machine() -> dict[str, Any]:
    """Date, load average, cores and bf16 support: what a reader needs to weigh the figures."""
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    versions = {}
    for name in ("vinerun", "openvino", "onnxruntime"):
        try:
            versions[name] = __import__(name).__version__
        except (ImportError, AttributeError):
            versions[name] = None
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "loadavg": load, "cores": len(os.sched_getaffinity(0)),
            "native_bf16": native_bf16(), "versions": versions, "vinerun_from": _where("vinerun")}


def _where(module: str) -> str | None:
    try:
        return os.path.dirname(__import__(module).__file__)
    except ImportError:
        return None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", choices=sorted(all_models()), default=list(MODELS),
                   help="default: every f32 model; the int8 ones (int8_models.py) are named: resnet50-int8 ...")
    p.add_argument("--seconds", type=float, default=0.5, help="seconds per contender per turn")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds (medians are over them)")
    p.add_argument("--compile-reps", type=int, default=3)
    p.add_argument("--settle", type=float, default=0.2,
                   help="seconds of quiet before each timed turn (the last contender's spinning threads go idle)")
    p.add_argument("--runtimes", nargs="+", default=["vinerun", "openvino", "onnxruntime"])
    p.add_argument("--no-memory", action="store_true", help="skip the per-contender memory child processes")
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun-bench"),
                   help="where built model files are written (and reused)")
    p.add_argument("--json", help="also write every figure to this JSON file")
    p.add_argument("--readme", nargs="?", const=os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md"),
                   help="write the zoo summary (ratios, geometric means, worst models) and the full table into this "
                        "Markdown file between its zoo markers (default: benchmarks/README.md)")
    p.add_argument("--quick", action="store_true", help="smoke test: 1 round of 0.1 s turns, 1 compile, no memory")
    p.add_argument("--memory-child", nargs=3, metavar=("CONTENDER", "INPUTS_NPZ", "PATH"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.compile_reps, args.no_memory, args.settle = 0.1, 1, 1, True, 0.0
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.memory_child:
        return memory_child(*args.memory_child)
    info = machine()
    bf16 = bool(info["native_bf16"])
    contenders = available(bf16, tuple(args.runtimes))
    log(f"{info['cores']} cores, load average {info['loadavg']}; contenders: {[c.name for c in contenders]}")
    if not bf16:
        log("bf16 skipped: this CPU has neither AVX512-BF16 nor AMX (openvino would only emulate bf16)")
    rows: list[Row] = []
    for name in args.models:
        spec = all_models()[name]
        log(f"{name}: building/finding the model file")
        path = spec.build(args.folder)
        if isinstance(spec, Int8Spec):
            chosen = int8_contenders(MODELS[spec.source].build(args.folder), path, tuple(args.runtimes))
        else:
            chosen = [c for c in contenders if spec.bf16 or c.precision == "f32"]
        rows += measure_model(spec, path, chosen, args.seconds, args.rounds, args.compile_reps, not args.no_memory,
                              args.settle)
    info["loadavg_after"] = machine()["loadavg"]
    print(f"\nvinerun from {info['vinerun_from']}")
    print(f"{info['date']}, {info['cores']} cores, load average {info['loadavg']} before, "
          f"{info['loadavg_after']} after; {args.rounds} rounds of {args.seconds} s turns per contender")
    if not bf16:
        print("bf16: not measured, the CPU has no native bf16 (neither AVX512-BF16 nor AMX)")
    full = table(rows)
    print(full)
    summary = zoo_summary(rows)
    print("\n" + summary)
    if args.readme:
        header = (f"{info['date']}, {info['cores']} cores, openvino {info['versions']['openvino']}, onnxruntime "
                  f"{info['versions']['onnxruntime']}, load average {info['loadavg']} before and "
                  f"{info['loadavg_after']} after; {args.rounds} rounds of {args.seconds} s turns. vinerun / openvino "
                  "(latency and compile: lower is better; FPS: higher is better):")
        write_readme_section(f"{header}\n\n{summary}\n\nEvery figure:\n\n{full}", args.readme)
        log(f"wrote the zoo tables into {args.readme}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "args": {k: v for k, v in vars(args).items() if k != "memory_child"},
                       "rows": [asdict(r) for r in rows]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
