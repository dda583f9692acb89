"""The host cost of a batch-1 request through ``AsyncInferQueue`` and automatic batching, without a GPU.

A tiny model (a multiply and a ReLU of a 3x8x8 corner of its input: negligible compute) on the GPU plugin's CPU
stand-in (``vinerun.plugins.gpu.backend.stand_in``: the same plugin, plans and BATCH device on PyTorch's CPU
device), compiled for ``BATCH:GPU(n)`` under the THROUGHPUT hint (what the hint's automatic batching compiles on a
real GPU whose OPTIMAL_BATCH_SIZE is n) and driven by an ``AsyncInferQueue`` of OPTIMAL_NUMBER_OF_INFER_REQUESTS
requests with host numpy inputs, whole rounds only. It prints requests/s and microseconds per request: the Python
request path a real GPU goes through too. With ``--size 224`` (ResNet-50's input) the copies count as well, and
the stand-in's "upload" (a new batch-sized tensor per execution, where a GPU copies from its pinned buffers) is a
cost a GPU does not have.

    .venv/bin/python benchmarks/gpu/host_rate.py --batches 4 16 64 --requests 40000
    .venv/bin/python benchmarks/gpu/host_rate.py --size 224 --requests 5000      # ResNet-50-sized inputs
    .venv/bin/python benchmarks/gpu/host_rate.py --profile 20     # cProfile's top 20 functions (main thread)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.plugins.gpu import backend


def tiny_model(size: int = 8) -> ov.Model:
    """A 1x3xSIZExSIZE input whose top-left 3x8x8 corner is scaled and ReLU'd: an image-sized input is copied and
    uploaded whole, with negligible compute."""
    x = ops.parameter([1, 3, size, size], np.float32, name="data")
    corner = ops.slice(x, np.array([0, 0], np.int64), np.array([8, 8], np.int64), np.array([1, 1], np.int64),
                       np.array([2, 3], np.int64)) if size > 8 else x
    scale = ops.constant(np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32))
    y = ops.relu(ops.multiply(corner, scale), name="out")
    return ov.Model([y], [x], "tiny")


def rate(batch: int, requests: int, size: int = 8, jobs: int = 0, profile: int = 0) -> tuple[float, float, int]:
    """(requests/s, microseconds per request, queue length) of ``BATCH:GPU(batch)`` under the THROUGHPUT hint with
    ``jobs`` requests (0: OPTIMAL_NUMBER_OF_INFER_REQUESTS)."""
    config = {"PERFORMANCE_HINT": "THROUGHPUT", "AUTO_BATCH_TIMEOUT": 1000, "INFERENCE_PRECISION_HINT": "f32"}
    compiled = ov.Core().compile_model(tiny_model(size), f"BATCH:GPU({batch})", config)
    queue = ov.AsyncInferQueue(compiled, jobs)
    jobs = len(queue)
    done = [0]
    queue.set_callback(lambda request, userdata: done.__setitem__(0, done[0] + 1))
    x = np.random.default_rng(1).standard_normal((1, 3, size, size)).astype(np.float32)
    for _ in range(2 * jobs):  # warm-up: the pools of device requests are filled
        queue.start_async({"data": x}, userdata=0)
    queue.wait_all()
    n = -(-requests // jobs) * jobs  # whole rounds: a partial batch would wait for AUTO_BATCH_TIMEOUT
    profiler = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    for i in range(n):
        queue.start_async({"data": x}, userdata=i)
    queue.wait_all()
    if profiler is not None:
        profiler.disable()
    seconds = time.perf_counter() - t0
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(profile)
    return n / seconds, seconds / n * 1e6, jobs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", nargs="+", type=int, default=[16, 64], help="BATCH sizes (default 16 64)")
    p.add_argument("--requests", type=int, default=20000, help="timed requests per batch size (whole rounds)")
    p.add_argument("--size", type=int, default=8, help="input height and width (default 8; 224: image-sized)")
    p.add_argument("--jobs", type=int, default=0, help="queue length (default 0: OPTIMAL_NUMBER_OF_INFER_REQUESTS)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="cProfile the timed loop (main thread only) and print its top N functions")
    args = p.parse_args(argv)
    with backend.stand_in():
        for batch in args.batches:
            per_s, us, jobs = rate(batch, args.requests, args.size, args.jobs, args.profile)
            print(f"BATCH:GPU({batch}) stand-in, 1x3x{args.size}x{args.size}, {jobs} requests: "
                  f"{per_s:9.0f} requests/s, {us:6.1f} us per request", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
