"""Real-model accuracy checks of vinerun's ``GPU`` device against its ``CPU`` device (f32).

Each model is compiled three times: CPU with ``INFERENCE_PRECISION_HINT=f32`` (the reference), GPU with the f32
hint, GPU with its default precision (f16). For every output the error is ``max|gpu - cpu| / max|cpu|`` (relative
to the output's largest magnitude); GPU-f32 must stay within ``--tolerance`` (1e-4). Classifiers (and the OCR
recognizer's per-step character scores) also report how often the arg-max agrees with CPU's.

Models (nothing is downloaded): ``resnet50`` (``benchmarks/models.py``), ``mobilenetv2`` and ``bert`` (the
repo's builders in ``model_zoo.py``), ``silero-vad`` (the silero-vad package's ONNX file; ``--steps`` calls with
the LSTM state fed back, each device feeding back its own state), ``ppocr-det`` / ``ppocr-rec`` (PaddleOCR
exports shipped by rapidocr-onnxruntime). A model whose package is missing prints ``skipped: <why>``;
``--models-dir`` is searched first for the packaged files (so they can be copied to a machine without the
packages).

    python benchmarks/gpu/model_checks.py                       # a real GPU, or the stand-in where none
    python benchmarks/gpu/model_checks.py --stand-in --models mobilenetv2 silero-vad --batch 1
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/: models.py, model_zoo.py
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repo, for vinerun without installing it

from model_zoo import MODELS, mobilenet_v2_onnx  # noqa: E402
from models import save_resnet50  # noqa: E402

import vinerun as ov  # noqa: E402
from vinerun.models._common import rng  # noqa: E402
from vinerun.plugins.gpu import backend as gpu_backend  # noqa: E402

Feed = dict[str, np.ndarray]


@dataclass
class Check:
    """A model to check: ``build(folder, batch) -> path``; ``feeds(batch)``: one feed per call (a stateful
    model's later feeds get the fed-back state); ``argmax``: compare arg-max over the last axis of output 0."""

    name: str
    build: Callable[[str, int], str]
    feeds: Callable[[int], list[Feed]]
    argmax: bool = False
    feedback: dict[int, str] = field(default_factory=dict)
    #: the files a package ships that can stand for this model (looked up in --models-dir first)
    packaged: tuple[str, ...] = ()


def _images(batch: int, size: int = 224) -> list[Feed]:
    return [{"data": rng(1).standard_normal((batch, 3, size, size)).astype(np.float32)}]


def _batched(file: str, build: Callable[..., Any]) -> Callable[[str, int], str]:
    def make(folder: str, batch: int) -> str:
        path = os.path.join(folder, f"{file}_b{batch}.onnx")
        if not os.path.exists(path):
            os.makedirs(folder, exist_ok=True)
            build(path, batch)
        return path
    return make


def _save_mobilenet(path: str, batch: int) -> None:
    import onnx

    onnx.save(mobilenet_v2_onnx(batch=batch), path)


def _zoo(name: str) -> Callable[[str, int], str]:
    return lambda folder, batch: MODELS[name].build(folder)


def _silero_feeds(steps: int) -> Callable[[int], list[Feed]]:
    """``steps`` consecutive 16 kHz chunks (64 samples of context + 512 new) of a tone in noise."""
    def feeds(batch: int) -> list[Feed]:
        t = np.arange(512 * steps + 64) / 16000
        audio = (0.4 * np.sin(2 * np.pi * 180 * t) * (t > 0.05) + 0.01 * rng(1).standard_normal(t.size))
        audio = audio.astype(np.float32)
        return [{"input": audio[None, i * 512:i * 512 + 576], "state": np.zeros((2, 1, 128), np.float32),
                 "sr": np.array(16000, np.int64)} for i in range(steps)]
    return feeds


def checks(steps: int) -> dict[str, Check]:
    return {
        "resnet50": Check("resnet50", _batched("resnet50", lambda p, b: save_resnet50(p, batch=b)), _images,
                          argmax=True),
        "mobilenetv2": Check("mobilenetv2", _batched("mobilenetv2", _save_mobilenet), _images, argmax=True),
        "bert": Check("bert", _zoo("bert"), lambda b: [MODELS["bert"].inputs()]),
        "silero-vad": Check("silero-vad", _zoo("silero-vad"), _silero_feeds(steps), feedback={1: "state"},
                            packaged=("silero_vad_op18_ifless.onnx", "silero_vad.onnx")),
        "ppocr-det": Check("ppocr-det", _zoo("ppocr-det"), lambda b: [MODELS["ppocr-det"].inputs()],
                           packaged=("ch_PP-OCRv4_det_infer.onnx",)),
        "ppocr-rec": Check("ppocr-rec", _zoo("ppocr-rec"), lambda b: [MODELS["ppocr-rec"].inputs()], argmax=True,
                           packaged=("ch_PP-OCRv4_rec_infer.onnx",)),
    }


def run(compiled: ov.CompiledModel, feeds: list[Feed], feedback: dict[int, str]) -> list[list[np.ndarray]]:
    """The outputs of each call; a stateful model gets its own previous outputs fed back."""
    request = compiled.create_infer_request()
    results: list[list[np.ndarray]] = []
    for i, feed in enumerate(feeds):
        feed = dict(feed)
        if i:
            feed.update({name: results[-1][idx] for idx, name in feedback.items()})
        outputs = request.infer(feed).to_tuple()
        results.append([np.array(o, dtype=np.float32) if np.asarray(o).dtype.kind == "f" else np.array(o)
                        for o in outputs])
    return results


def relative_error(outs: list[list[np.ndarray]], ref: list[list[np.ndarray]]) -> float:
    """max over calls and outputs of max|out - ref| / max|ref|."""
    worst = 0.0
    for call, ref_call in zip(outs, ref, strict=True):
        for o, r in zip(call, ref_call, strict=True):
            o, r = np.asarray(o, np.float64), np.asarray(r, np.float64)
            if o.shape != r.shape:
                return float("inf")
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            diff = float(np.max(np.abs(o - r))) if r.size else 0.0
            worst = max(worst, diff / scale if scale else diff)
    return worst


def argmax_agreement(outs: list[list[np.ndarray]], ref: list[list[np.ndarray]]) -> float:
    a = np.concatenate([np.argmax(c[0], axis=-1).ravel() for c in outs])
    b = np.concatenate([np.argmax(c[0], axis=-1).ravel() for c in ref])
    return float(np.mean(a == b))


def compile_and_run(core: ov.Core, path: str, device: str, config: dict[str, str], check: Check,
                    feeds: list[Feed]) -> tuple[list[list[np.ndarray]], float, float]:
    """(outputs, compile seconds, seconds per call)."""
    start = time.perf_counter()
    compiled = core.compile_model(core.read_model(path), device, config)
    compile_s = time.perf_counter() - start
    run(compiled, feeds[:1], {})  # warm-up
    start = time.perf_counter()
    outs = run(compiled, feeds, check.feedback)
    return outs, compile_s, (time.perf_counter() - start) / len(feeds)


def check_model(check: Check, folder: str, batch: int, tolerance: float, onnx_dir: str | None) -> bool:
    """Print one model's figures; whether GPU-f32 is within tolerance (True when skipped)."""
    try:
        found = [os.path.join(onnx_dir, f) for f in check.packaged if onnx_dir]
        found = [f for f in found if os.path.exists(f)]
        path = found[0] if found else check.build(folder, batch)
    except (RuntimeError, ImportError) as exc:
        print(f"{check.name}: skipped: {exc}", flush=True)
        return True
    feeds = check.feeds(batch)
    core = ov.Core()
    ref, cpu_compile, cpu_call = compile_and_run(core, path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}, check, feeds)
    print(f"{check.name}: {os.path.basename(path)}, {len(feeds)} call(s); CPU f32 compile {cpu_compile:.2f} s, "
          f"{cpu_call * 1e3:.1f} ms/call", flush=True)
    ok = True
    for label, config in (("GPU f32", {"INFERENCE_PRECISION_HINT": "f32"}), ("GPU f16", {})):
        try:
            outs, compile_s, call_s = compile_and_run(core, path, "GPU", config, check, feeds)
        except Exception as exc:  # noqa: BLE001 - a failure to compile or run is the finding
            print(f"  {label}: FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}", flush=True)
            ok = False
            continue
        err = relative_error(outs, ref)
        line = f"  {label}: max rel error {err:.2e}"
        if label == "GPU f32":
            within = err <= tolerance
            ok &= within
            line += f" ({'ok' if within else 'FAIL'}: limit {tolerance:.0e})"
        if check.argmax:
            line += f", argmax agreement {argmax_agreement(outs, ref) * 100:.1f}%"
        print(f"{line}; compile {compile_s:.2f} s, {call_s * 1e3:.1f} ms/call", flush=True)
    return ok


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    names = list(checks(1))
    p.add_argument("--models", nargs="+", choices=names, default=names, metavar="NAME",
                   help=f"models to check (default all: {' '.join(names)})")
    p.add_argument("--stand-in", action="store_true",
                   help="run GPU on the test-only stand-in (PyTorch's CPU device); automatic where no GPU exists")
    p.add_argument("--batch", type=int, default=4, help="batch of the image classifiers (default 4)")
    p.add_argument("--steps", type=int, default=8, help="silero-vad calls, state fed back (default 8)")
    p.add_argument("--tolerance", type=float, default=1e-4, help="limit of GPU-f32's relative error (1e-4)")
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun_gpu_models"),
                   help="where built models are written (and reused)")
    p.add_argument("--models-dir", "--onnx-dir", dest="onnx_dir",
                   help="a folder searched first for the packaged ONNX files (silero-vad, PP-OCR), for a machine "
                        "without those packages")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")
    stand_in = args.stand_in or not gpu_backend.has_gpu()
    table = checks(args.steps)
    failed = []
    with gpu_backend.stand_in() if stand_in else contextlib.nullcontext():
        device = gpu_backend.devices()[0]
        props = device.properties()
        print(f"GPU: {'stand-in (PyTorch CPU device)' if stand_in else getattr(props, 'name', device.kind)}")
        for name in args.models:
            if not check_model(table[name], args.folder, args.batch, args.tolerance, args.onnx_dir):
                failed.append(name)
    print(f"GPU f32 within {args.tolerance:.0e}: " + ("all checked models" if not failed else
                                                     f"NO for {', '.join(failed)}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
