"""CPU scaling: LATENCY at 1, 2, 4, 8 ... threads up to every core, and the THROUGHPUT hint's streams and
requests, vinerun beside openvino on the same file in the same run (interleaved turns, medians), f32 and bf16
(where the CPU computes bf16 natively).

    python benchmarks/thread_sweep.py                          # resnet50 from model_zoo, every thread count
    python benchmarks/thread_sweep.py --models resnet50 mobilenetv2 bert --threads 1 2 4 8 16 --seconds 1
    python benchmarks/thread_sweep.py --models bert --threads 16 --config ENABLE_CPU_PINNING=NO   # unpinned

The THROUGHPUT rows say how many streams, threads per stream and requests each runtime chose, vinerun's reason
(the model's memory pressure: ``vinerun.plugins.cpu.mem_pressure``), and the requests per second each gets with
an ``AsyncInferQueue`` of that many batch-1 requests (``--models demo``: the server's bundled small CNN, where the
Python per request is what limits the rate).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contenders  # noqa: E402
import model_zoo  # noqa: E402

import vinerun  # noqa: E402
from vinerun.plugins.cpu import cpu_topology, device_info, mem_pressure  # noqa: E402


def _latency_ms(compiled: object, feed: dict, seconds: float, one_thread_calls: list[int]) -> float:
    """The median call time of a sync request; adds to ``one_thread_calls`` [calls on 1 thread, all calls] from
    vinerun's thread governor (it moves calls to 1 thread when more threads look slower)."""
    request = compiled.create_infer_request()  # type: ignore[attr-defined]
    request.infer(feed)
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        request.infer(feed)
        times.append(time.perf_counter() - t0)
    for governor in getattr(getattr(request, "_impl", None), "_governors", {}).values():
        if governor.max_threads > 1:
            one_thread_calls[0] += governor.calls[1]
            one_thread_calls[1] += sum(governor.calls.values())
    return statistics.median(times) * 1e3


def _rate(mod: object, compiled: object, feed: dict, seconds: float) -> float:
    """Requests per second through an AsyncInferQueue of the compiled model's optimal number of requests."""
    jobs = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))  # type: ignore[attr-defined]
    queue = mod.AsyncInferQueue(compiled, jobs)  # type: ignore[attr-defined]
    for _ in range(2 * jobs):
        queue.start_async(feed)
    queue.wait_all()
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(jobs):
            queue.start_async(feed)
        done += jobs
    queue.wait_all()
    return done / (time.perf_counter() - start)


def _runtimes(names: list[str]) -> dict[str, object]:
    found = {"vinerun": vinerun}
    if "openvino" in names and contenders.importable("openvino"):
        import openvino

        found["openvino"] = openvino
    return found


def _reason(path: str) -> str:
    model = vinerun.Core().read_model(path)
    pressure = mem_pressure.mem_pressure(model, cpu_topology.l2_per_core())
    isa = mem_pressure.isa_multiplier(device_info.cpu_flags())
    return (f"worst layer L2/bytes {pressure.worst:.3g}, compute-bound convs {pressure.compute_convs:.0%}, "
            f"ISA x{isa:g}: prefers {mem_pressure.preferred_threads(pressure, isa) or 'no'} threads per stream")


def _demo() -> tuple[str, dict]:
    folder = os.path.join(os.path.dirname(vinerun.__file__), "serving", "demo", "cnn", "1")
    return os.path.join(folder, "model.onnx"), {"image": np.random.default_rng(0).random((1, 3, 32, 32), np.float32)}


def sweep(name: str, args: argparse.Namespace) -> None:
    if name == "demo":
        path, feed = _demo()
    else:
        spec = model_zoo.MODELS[name]
        path, feed = spec.build(args.folder), spec.inputs()
    runtimes = _runtimes(args.runtimes)
    precisions = ["f32"] + (["bf16"] if contenders.native_bf16() else [])
    print(f"\n{name}: {_reason(path)}")
    for precision in precisions:
        for threads in args.threads:
            compiled = {rt: mod.Core().compile_model(path, "CPU", {  # type: ignore[attr-defined]
                "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
                "INFERENCE_PRECISION_HINT": precision, **args.config}) for rt, mod in runtimes.items()}
            turns: dict[str, list[float]] = {rt: [] for rt in runtimes}
            one_thread = [0, 0]
            for _ in range(args.rounds):
                for rt, c in compiled.items():
                    turns[rt].append(_latency_ms(c, feed, args.seconds, one_thread))
            ms = {rt: statistics.median(v) for rt, v in turns.items()}
            ratio = f"  vinerun / openvino {ms['vinerun'] / ms['openvino']:.2f}x" if "openvino" in ms else ""
            governed = f"  (vinerun calls on 1 thread: {one_thread[0]} of {one_thread[1]})" if one_thread[0] else ""
            print(f"  LATENCY {precision} {threads:3d} threads: " +
                  ", ".join(f"{rt} {v:.2f} ms" for rt, v in ms.items()) + ratio + governed, flush=True)
        for rt, mod in runtimes.items():
            c = mod.Core().compile_model(path, "CPU", {  # type: ignore[attr-defined]
                "PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_PRECISION_HINT": precision, **args.config})
            streams, threads = int(c.get_property("NUM_STREAMS")), int(c.get_property("INFERENCE_NUM_THREADS"))
            rate = statistics.median(_rate(mod, c, feed, args.seconds) for _ in range(args.rounds))
            print(f"  THROUGHPUT {precision} {rt}: {streams} streams x {max(threads // max(streams, 1), 1)} "
                  f"threads, {c.get_property('OPTIMAL_NUMBER_OF_INFER_REQUESTS')} requests: {rate:.0f} requests/s",
                  flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet50"], choices=["demo", *sorted(model_zoo.MODELS)])
    cores = contenders.cores()
    default_threads = sorted({t for t in (1, 2, 4, 8, 16, 32, 64) if t < cores} | {cores})
    ap.add_argument("--threads", nargs="+", type=int, default=default_threads)
    ap.add_argument("--runtimes", nargs="+", default=["vinerun", "openvino"])
    ap.add_argument("--seconds", type=float, default=0.5, help="seconds per turn (default 0.5)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved turns per contender (default 3)")
    ap.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun_zoo"))
    ap.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                    help="more properties for both runtimes, e.g. ENABLE_CPU_PINNING=NO")
    args = ap.parse_args()
    try:
        args.config = dict(item.split("=", 1) for item in args.config)
    except ValueError:
        ap.error(f"--config takes KEY=VALUE items, got {args.config}")
    os.makedirs(args.folder, exist_ok=True)
    print(f"{cores} cores, {device_info.cpu_name()}")
    for name in args.models:
        sweep(name, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
