"""THROUGHPUT vs LATENCY on the CPU device: frames per second on a ResNet-50-shaped model.

LATENCY: 1 stream, one request at a time (``infer`` in a loop). THROUGHPUT: the hint's streams
(2 on a 2-core machine, 1 thread each) kept busy by an ``AsyncInferQueue`` with
``OPTIMAL_NUMBER_OF_INFER_REQUESTS`` jobs. The contenders run in short interleaved turns
(L T L T ...) and the medians are reported, since these machines are shared. ``--openvino`` adds
openvino's CPU plugin with the same two hints on the same ONNX file, in the same turns.

    python benchmarks/streams.py --image 224 --turn 3 --rounds 3 --openvino
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import save_resnet50  # noqa: E402

import vinerun as ov  # noqa: E402


def latency_runner(compiled, data: np.ndarray) -> Callable[[float], int]:
    request = compiled.create_infer_request()
    request.infer({0: data})  # warm-up

    def run(seconds: float) -> int:
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            request.infer({0: data})
            n += 1
        return n
    return run


def throughput_runner(queue_cls, compiled, data: np.ndarray) -> Callable[[float], int]:
    queue = queue_cls(compiled, 0)
    for _ in range(len(queue)):  # warm-up: every stream once
        queue.start_async({0: data})
    queue.wait_all()

    def run(seconds: float) -> int:
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            queue.start_async({0: data})  # waits for an idle request: keeps every stream busy
            n += 1
        queue.wait_all()
        return n
    return run


def measure(runners: dict[str, Callable[[float], int]], turn: float, rounds: int) -> dict[str, float]:
    fps: dict[str, list[float]] = {name: [] for name in runners}
    for r in range(rounds):
        for name, run in runners.items():
            t0 = time.perf_counter()
            n = run(turn)
            fps[name].append(n / (time.perf_counter() - t0))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in fps.items()), flush=True)
    return {name: statistics.median(v) for name, v in fps.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--turn", type=float, default=3.0, help="seconds per turn")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--openvino", action="store_true", help="also run openvino on the same file")
    args = p.parse_args(argv)

    path = save_resnet50(os.path.join(tempfile.mkdtemp(), "resnet50.onnx"), image=args.image)
    data = np.random.default_rng(0).standard_normal((1, 3, args.image, args.image)).astype(np.float32)
    core = ov.Core()
    lat = core.compile_model(path, "CPU", {"PERFORMANCE_HINT": "LATENCY"})
    tput = core.compile_model(path, "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
    print(f"vinerun THROUGHPUT: {tput.get_property('NUM_STREAMS')} streams, "
          f"{tput.get_property('OPTIMAL_NUMBER_OF_INFER_REQUESTS')} requests")
    runners = {"vinerun LATENCY": latency_runner(lat, data),
               "vinerun THROUGHPUT": throughput_runner(ov.AsyncInferQueue, tput, data)}
    if args.openvino:
        import openvino

        oc = openvino.Core()
        runners["openvino LATENCY"] = latency_runner(oc.compile_model(path, "CPU", {"PERFORMANCE_HINT": "LATENCY"}),
                                                     data)
        runners["openvino THROUGHPUT"] = throughput_runner(
            openvino.AsyncInferQueue, oc.compile_model(path, "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"}), data)
    fps = measure(runners, args.turn, args.rounds)
    print(f"\nResNet-50 {args.image}x{args.image}, batch 1, median FPS over {args.rounds} rounds of {args.turn}s:")
    for name, value in fps.items():
        print(f"  {name:22s} {value:8.2f} FPS")
    for lib in ("vinerun", "openvino"):
        if f"{lib} LATENCY" in fps:
            print(f"  {lib} THROUGHPUT / LATENCY = {fps[f'{lib} THROUGHPUT'] / fps[f'{lib} LATENCY']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
