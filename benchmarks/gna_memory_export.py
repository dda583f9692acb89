"""GNA export/import fidelity and Kaldi-style memory layers: the figures of docs/gna.md.

``export``: for speech models (with and without LSTM) and the memory-layer models, compiled in
``GNA_SW_EXACT`` (i16 / i8) with an input scale factor given per input name, by the legacy index key,
or set on the Core: the max |difference| between the compiled model and the model imported from its
blob (in a fresh Core, and in a Core whose own GNA properties say otherwise), over 100 frames on one
request. ``memory``: the memory layers (``vinerun.models.speech.memory_layer_model``) streamed over
``--frames`` frames of N(0,1) features in ``GNA_SW_EXACT`` against ``GNA_SW_FP32`` (and the FP32 path
against the CPU device in f32): max, avg, RMS error, the max over the last quarter of the frames (drift),
the state's scale factor, and whether ``reset_state`` repeats the first frames bit for bit.

    python benchmarks/gna_memory_export.py export
    python benchmarks/gna_memory_export.py memory --frames 400
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

import vinerun as ov
from vinerun.models import speech
from vinerun.plugins.gna.compiled_model import GNACompiledModel

FP32 = {"GNA_DEVICE_MODE": "GNA_SW_FP32"}


def frames_for(model: ov.Model, n: int, seed: int = 1) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    shapes = [list(p.get_partial_shape().to_shape()) for p in model.get_parameters()]
    return [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(n)]


def run(compiled: ov.CompiledModel, frames: list[list[np.ndarray]]) -> np.ndarray:
    request = compiled.create_infer_request()
    return np.concatenate([np.asarray(request.infer(f)[0]).reshape(1, -1) for f in frames])


def sample_scale(frames: list[list[np.ndarray]]) -> float:
    return float(16384 / max(np.abs(x).max() for f in frames for x in f))


def export_models() -> dict[str, Callable[[], ov.Model]]:
    models: dict[str, Callable[[], ov.Model]] = {
        "speech 40 (no LSTM)": lambda: speech.speech_model(features=40, hidden=256, outputs=128),
        "speech 40 + LSTM 128": lambda: speech.speech_model(features=40, hidden=256, outputs=128, lstm=128),
    }
    for kind in getattr(speech, "MEMORY_LAYERS", ()):
        models[f"memory {kind}"] = lambda kind=kind: speech.memory_layer_model(kind)
    return models


def export_table(frames_n: int) -> None:
    print("| Model | Precision | Scale factor given as | fresh Core | Core with other GNA properties |")
    print("|---|---|---|---|---|")
    for name, build in export_models().items():
        model = build()
        frames = frames_for(model, frames_n)
        sf = sample_scale(frames)
        names = [p.friendly_name for p in model.get_parameters()]
        for precision in ("i16", "i8"):
            given: dict[str, dict[str, Any]] = {
                "per input": {"GNA_SCALE_FACTOR_PER_INPUT": {n: sf for n in names}},
                "legacy index": {f"GNA_SCALE_FACTOR_{i}": sf for i in range(len(names))},
            }
            for how, config in given.items():
                cells = [name, precision, how]
                try:
                    compiled = ov.Core().compile_model(model, "GNA", {**config, "INFERENCE_PRECISION_HINT": precision})
                except Exception as e:  # noqa: BLE001 - report what does not compile
                    print(f"| {' | '.join(cells)} | compile fails: {type(e).__name__}: {str(e)[:80]} | |")
                    continue
                ref = run(compiled, frames)
                blob = compiled.export_model().getvalue()
                other = ov.Core()
                other.set_property("GNA", {"INFERENCE_PRECISION_HINT": "i8" if precision == "i16" else "i16",
                                           "GNA_PWL_MAX_ERROR_PERCENT": 0.5, "GNA_SCALE_FACTOR_0": 3.0})
                for core in (ov.Core(), other):
                    try:
                        diff = np.abs(run(core.import_model(blob, "GNA"), frames) - ref).max()
                        cells.append(f"{diff:.4g}")
                    except Exception as e:  # noqa: BLE001
                        cells.append(f"import fails: {type(e).__name__}")
                print(f"| {' | '.join(cells)} |")


def memory_table(frames_n: int) -> None:
    print("| Memory layer | Precision | state scale | CPU f32 vs FP32 | max | avg | RMS | max, last quarter "
          "| reset repeats |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in speech.MEMORY_LAYERS:
        model = speech.memory_layer_model(kind)
        frames = frames_for(model, frames_n)
        sf = sample_scale(frames)
        core = ov.Core()
        fp = run(core.compile_model(model, "GNA", FP32), frames)
        cpu = run(core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}), frames)
        for precision in ("i16", "i8"):
            config = {"GNA_SCALE_FACTOR_PER_INPUT": {"feats": sf}, "INFERENCE_PRECISION_HINT": precision}
            try:
                compiled = core.compile_model(model, "GNA", config)
            except Exception as e:  # noqa: BLE001
                print(f"| {kind} | {precision} | compile fails: {type(e).__name__}: {str(e)[:90]} |")
                continue
            request = compiled.create_infer_request()
            out = np.concatenate([np.asarray(request.infer(f)[0]).reshape(1, -1) for f in frames])
            request.reset_state()
            again = np.concatenate([np.asarray(request.infer(f)[0]).reshape(1, -1) for f in frames[:20]])
            e = fp - out
            impl = GNACompiledModel(model, config)
            scale = (impl.exact() if hasattr(impl, "exact") else impl.backend).state_scales["m"]
            print(f"| {kind} | {precision} | {scale:.6g} | {np.abs(cpu - fp).max():.1e} | {np.abs(e).max():.4f} "
                  f"| {np.abs(e).mean():.4f} | {np.sqrt((e ** 2).mean()):.4f} "
                  f"| {np.abs(e[-len(e) // 4:]).max():.4f} | {np.array_equal(again, out[:20])} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["export", "memory"])
    p.add_argument("--frames", type=int, default=None, help="frames per run (export 100, memory 400)")
    args = p.parse_args()
    if args.what == "export":
        export_table(args.frames or 100)
    else:
        memory_table(args.frames or 400)


if __name__ == "__main__":
    main()
