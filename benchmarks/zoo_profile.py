"""Where a zoo model's time goes: vinerun's and openvino's per-layer counters side by side.

Compiles the model (a ``model_zoo`` name, built in ``--folder`` if needed, or a file with ``--inputs`` from a
zoo name) on both runtimes with ``PERF_COUNT`` under the LATENCY hint, runs ``--calls`` inferences after a
warm-up, and prints each runtime's time per layer type (summed over the calls' counters, per call) and its
slowest layers with their exec types. The counters measure layer by layer; their total is close to, not equal
to, a call's wall time (``wall ms``).

    python benchmarks/zoo_profile.py magika --folder /tmp/zoo
    python benchmarks/zoo_profile.py ppocr-det --precision bf16 --top 15
"""

from __future__ import annotations

import argparse
import collections
import importlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_zoo import MODELS  # noqa: E402


def layer_times(runtime: str, path: str, feed: dict[str, np.ndarray], precision: str, calls: int, threads: int = 0
                ) -> tuple[float, list[tuple[str, str, str, float]]]:
    """(wall ms per call, [(layer, type, exec type, ms per call)]) of one runtime (``threads``: 0 for all)."""
    ov = importlib.import_module(runtime)
    core = ov.Core()
    config = {"PERFORMANCE_HINT": "LATENCY", "PERF_COUNT": True, "INFERENCE_PRECISION_HINT": precision}
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = core.compile_model(core.read_model(path), "CPU", config)
    request = compiled.create_infer_request()
    for _ in range(5):
        request.infer(feed)
    totals: dict[tuple[str, str, str], float] = collections.defaultdict(float)
    t0 = time.perf_counter()
    for _ in range(calls):
        request.infer(feed)
        for info in request.profiling_info:
            if str(info.status).endswith("EXECUTED"):
                totals[(info.node_name, info.node_type, info.exec_type)] += info.real_time.total_seconds() * 1e3
    wall = (time.perf_counter() - t0) * 1e3 / calls
    return wall, [(name, kind, exec_type, ms / calls) for (name, kind, exec_type), ms in totals.items()]


def report(runtime: str, wall: float, layers: list[tuple[str, str, str, float]], top: int) -> None:
    by_type: dict[str, float] = collections.defaultdict(float)
    count: dict[str, int] = collections.Counter()
    for _, kind, _, ms in layers:
        by_type[kind] += ms
        count[kind] += 1
    total = sum(by_type.values())
    print(f"\n## {runtime}: wall {wall:.3f} ms per call, counters {total:.3f} ms\n")
    print("| layer type | layers | ms per call | share |\n|---|---|---|---|")
    for kind, ms in sorted(by_type.items(), key=lambda kv: -kv[1]):
        print(f"| {kind} | {count[kind]} | {ms:.3f} | {100 * ms / max(total, 1e-9):.1f} % |")
    print("\n| slowest layers | type | exec type | ms per call |\n|---|---|---|---|")
    for name, kind, exec_type, ms in sorted(layers, key=lambda r: -r[3])[:top]:
        print(f"| {name[:60]} | {kind} | {exec_type} | {ms:.3f} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a model_zoo name, or a model file (then --inputs names the zoo model whose feed "
                                 "it takes)")
    p.add_argument("--inputs", help="the zoo model whose inputs a file argument is fed")
    p.add_argument("--folder", default="/tmp/vinerun-bench", help="where model_zoo builds (and finds) its files")
    p.add_argument("--precision", default="f32", choices=("f32", "bf16"))
    p.add_argument("--threads", type=int, default=0, help="INFERENCE_NUM_THREADS (default: every core)")
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--top", type=int, default=12, help="how many of the slowest layers to list")
    p.add_argument("--runtimes", nargs="+", default=["vinerun", "openvino"])
    args = p.parse_args(argv)
    if args.model in MODELS:
        spec = MODELS[args.model]
        path = spec.build(args.folder)
    else:
        if args.inputs not in MODELS:
            p.error("a model file needs --inputs ZOO_NAME (whose feed it takes)")
        spec, path = MODELS[args.inputs], args.model
    feed = spec.inputs()
    for runtime in args.runtimes:
        report(runtime, *layer_times(runtime, path, feed, args.precision, args.calls, args.threads), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
