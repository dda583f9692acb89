"""Where a GPU inference's time goes: the CUDA kernels of one inference, by kernel and by kind, for vinerun's plan
(replayed as its CUDA graph, as requests run it) and, with ``--torch-compile``, for ``torch.compile`` on the same
network; then vinerun's per-node profile (``PERF_COUNT``) summed by exec type.

    python benchmarks/gpu/kernel_profile.py --models resnet50 bert --batches 1 64
    python benchmarks/gpu/kernel_profile.py --models bert --batches 1 --torch-compile
    python benchmarks/gpu/kernel_profile.py --stand-in        # no GPU: checks the script on the CPU stand-in

"GPU busy" is the sum of the kernels' durations per inference; the latency beside it is a replay's, timed with
CUDA events: their difference is the time between kernels (launch gaps, graph overhead).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench  # noqa: E402  (the models, their export and the contenders' setups)

torch = bench.torch

#: kernel kinds by name, first match wins
KINDS = [("attention", r"fmha|flash|attention|sdpa"), ("triton", r"^triton_"),
         ("conv", r"conv|fprop|dgrad|implicit_gemm|xmma_.*nhwc|winograd"),
         ("gemm", r"gemm|cutlass|cublas|matmul|sm90_xmma|nvjet"), ("norm", r"norm|welford"),
         ("reduce", r"reduce"), ("copy", r"copy|memcpy|memset|cat|transpose"),
         ("elementwise", r"elementwise|vectorized|unrolled")]


def kind_of(name: str) -> str:
    low = name.lower()
    return next((kind for kind, pattern in KINDS if re.search(pattern, low)), "other")


def kernel_times(call: Callable[[], Any], runs: int) -> dict[str, tuple[int, float]]:
    """Kernel name -> (launches per inference, microseconds per inference) over ``runs`` calls."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        for _ in range(runs):
            call()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    count: Counter[str] = Counter()
    total: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if str(getattr(event, "device_type", "")).endswith("CUDA"):
            count[event.name] += 1
            total[event.name] += event.time_range.elapsed_us()
    return {name: (count[name] // runs, total[name] / runs) for name in count}


def report(label: str, kernels: dict[str, tuple[int, float]], latency_ms: float, top: int) -> None:
    busy = sum(us for _, us in kernels.values())
    launches = sum(n for n, _ in kernels.values())
    print(f"  {label}: latency {latency_ms:.3f} ms, GPU busy {busy / 1e3:.3f} ms in {launches} kernels "
          f"(gaps {max(latency_ms - busy / 1e3, 0):.3f} ms)")
    by_kind: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for name, (n, us) in kernels.items():
        by_kind[kind_of(name)][0] += n
        by_kind[kind_of(name)][1] += us
    print("    by kind: " + ", ".join(f"{k} {us / 1e3:.3f} ms/{int(n)}" for k, (n, us) in
                                      sorted(by_kind.items(), key=lambda kv: -kv[1][1])))
    for name, (n, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"    {us:8.1f} us {n:4d}x  {kind_of(name):11s} {name[:110]}")


def latency(call: Callable[[], Any], clock: bench.Clock, calls: int = 30) -> float:
    for _ in range(5):
        call()
    return statistics.median(clock.time(call, calls))


def node_profile(path: str, feed: dict[str, Any], device: Any, top: int) -> None:
    """vinerun's PERF_COUNT profile of one inference (no graph replay: each node between CUDA events)."""
    core = bench.ov.Core()
    model = core.read_model(path)
    model.reshape({k: list(v.shape) for k, v in feed.items()})
    compiled = core.compile_model(model, "GPU", {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    inputs = bench.device_feed(feed, device, torch.float32)
    for _ in range(3):
        request.infer(inputs)
    by_exec: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    for info in request.get_profiling_info():
        if str(info.status).endswith("EXECUTED") and not str(info.status).endswith("NOT_EXECUTED"):
            entry = by_exec[(info.node_type, info.exec_type)]
            entry[0] += 1
            entry[1] += info.real_time.total_seconds() * 1e6
    total = sum(us for _, us in by_exec.values())
    print(f"  vinerun nodes (PERF_COUNT, no graph): {total / 1e3:.3f} ms in {sum(int(n) for n, _ in by_exec.values())}"
          " executed nodes")
    for (node_type, exec_type), (n, us) in sorted(by_exec.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"    {us:8.1f} us {int(n):4d}x  {node_type:22s} {exec_type}")


def profile_model(model_def: bench.ModelDef, args: argparse.Namespace, device: Any, clock: bench.Clock) -> None:
    module = model_def.make()
    path = bench.export(model_def, module, args.folder)
    dtype = torch.float16 if args.precision == "fp16" else torch.float32
    for batch in args.batches:
        feed = model_def.inputs(batch, model_def.seq)
        print(f"{model_def.name} b{batch} {args.precision}", flush=True)
        mine = bench.vinerun_setup(path, feed, args.precision, device)()
        report("vinerun", kernel_times(mine, args.runs), latency(mine, clock), args.top)
        del mine
        if args.torch_compile and clock.cuda:
            compiled = bench.compile_setup(module, feed, dtype, device, batch)()
            report("torch.compile", kernel_times(compiled, args.runs), latency(compiled, clock), args.top)
            del compiled
            torch._dynamo.reset()
        if args.nodes:
            node_profile(path, feed, device, args.top)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--models", nargs="+", help="bench.py's models (default resnet50 bert)")
    p.add_argument("--batches", nargs="+", type=int, default=[1])
    p.add_argument("--precision", choices=("fp16", "f32"), default="fp16")
    p.add_argument("--runs", type=int, default=10, help="profiled inferences (default 10)")
    p.add_argument("--top", type=int, default=15, help="kernels listed (default 15)")
    p.add_argument("--torch-compile", action="store_true", help="profile torch.compile on the module too")
    p.add_argument("--nodes", action="store_true", help="vinerun's per-node PERF_COUNT profile too")
    p.add_argument("--stand-in", action="store_true", help="no GPU: the tiny models on the CPU stand-in")
    p.add_argument("--folder", default=os.path.join(bench.tempfile.gettempdir(), "vinerun_gpu_bench"))
    args = p.parse_args(argv)
    table = bench.STAND_IN_MODELS if args.stand_in else bench.MODELS
    args.models = args.models or (list(table) if args.stand_in else ["resnet50", "bert"])
    if torch is None or not (args.stand_in or torch.cuda.is_available()):
        print("no GPU (PyTorch sees no CUDA device); --stand-in checks the script on the CPU")
        return 0
    os.makedirs(args.folder, exist_ok=True)
    device = torch.device("cpu") if args.stand_in else torch.device("cuda", 0)
    clock = bench.Clock(device)
    with bench.gpu_backend.stand_in() if args.stand_in else contextlib.nullcontext():
        for name in args.models:
            profile_model(table[name], args, device, clock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
