"""Speed of the GNA_SW_EXACT emulation: frames per second and nanoseconds per multiply-accumulate.

The issue's bar (#6, Must show 5): a model of one million MACs per frame — a 1024x1024 affine with a
bias and a sigmoid PWL, weights from a fixed seed — runs at >= 1,000 frames/s. ``--model speech``
times the Kaldi-style speech model with its LSTM instead (MACs from the GNA cost model).

    OPENBLAS_NUM_THREADS=1 python benchmarks/gna_speed.py                 # 1M-MAC frame, 2,000 frames
    python benchmarks/gna_speed.py --threads 1 --repeats 5 --json         # median of 5 runs, JSON line
    python benchmarks/gna_speed.py --model speech --precision i8

``--threads N`` sets OPENBLAS_NUM_THREADS/OMP_NUM_THREADS before NumPy is imported (the script
re-executes itself once when they differ). Each repeat runs ``--frames`` synchronous inferences on
one request after ``--warmup`` frames; the report gives every repeat and the median, with the load
average beside it (other processes on a 2-core machine change everything).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["1m", "speech"], default="1m", help="1m: 1024x1024 affine + sigmoid")
    p.add_argument("--frames", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--precision", choices=["i16", "i8"], default="i16")
    p.add_argument("--target", default="GNA_TARGET_3_5")
    p.add_argument("--mode", default="GNA_SW_EXACT")
    p.add_argument("--threads", type=int, default=None, help="BLAS threads (re-executes with the env set)")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    return p.parse_args()


def _reexec_with_threads(threads: int) -> None:
    want = str(threads)
    if os.environ.get("OPENBLAS_NUM_THREADS") == want and os.environ.get("OMP_NUM_THREADS") == want:
        return
    env = {**os.environ, "OPENBLAS_NUM_THREADS": want, "OMP_NUM_THREADS": want, "MKL_NUM_THREADS": want}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def one_million_mac_model():  # noqa: ANN201 - vinerun is imported after the thread setting
    import numpy as np

    import vinerun as ov
    from vinerun import opset13 as ops

    rng = np.random.default_rng(0)
    x = ops.parameter([1, 1024], name="x")
    w = ops.constant((rng.standard_normal((1024, 1024)) / 32).astype(np.float32))
    b = ops.constant((rng.standard_normal((1, 1024)) * 0.1).astype(np.float32))
    y = ops.sigmoid(ops.add(ops.matmul(x, w, False, False), b), name="y")
    return ov.Model([y], [x], "affine_1m")


def main() -> int:
    args = _parse()
    if args.threads:
        _reexec_with_threads(args.threads)
    import numpy as np

    import vinerun as ov
    from vinerun.models.speech import speech_model

    model = one_million_mac_model() if args.model == "1m" else speech_model(features=440, hidden=512, outputs=256,
                                                                           lstm=256)
    name = model.get_parameters()[0].friendly_name
    config = {"GNA_DEVICE_MODE": args.mode, "INFERENCE_PRECISION_HINT": args.precision,
              "GNA_HW_EXECUTION_TARGET": args.target, "GNA_SCALE_FACTOR_PER_INPUT": {name: 8192.0}}
    compiled = ov.Core().compile_model(model, "GNA", config)
    macs = compiled._impl.estimate.macs
    shape = list(model.get_parameters()[0].get_partial_shape().to_shape())
    xs = np.random.default_rng(1).uniform(-2, 2, (64, *shape)).astype(np.float32)
    request = compiled.create_infer_request()
    for i in range(args.warmup):
        request.infer([xs[i % 64]])
    rates = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for i in range(args.frames):
            request.infer([xs[i % 64]])
        rates.append(args.frames / (time.perf_counter() - start))
    median = statistics.median(rates)
    result = {"model": model.friendly_name, "mode": args.mode, "precision": args.precision, "target": args.target,
              "macs_per_frame": macs, "frames": args.frames, "repeats": [round(r, 1) for r in rates],
              "frames_per_s": round(median, 1), "ns_per_mac": round(1e9 / (median * macs), 4),
              "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
              "loadavg": open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else None}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['model']} ({macs:,} MACs per frame), {args.mode} {args.precision} {args.target}, "
              f"BLAS threads {result['blas_threads']}, load {result['loadavg']}")
        print(f"  repeats: {', '.join(f'{r:,.0f}' for r in rates)} frames/s")
        print(f"  median:  {median:,.0f} frames/s, {result['ns_per_mac']} ns per MAC")
    return 0


if __name__ == "__main__":
    sys.exit(main())
