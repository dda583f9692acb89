"""Per-step cost of the CPU plan: a native segment against the same steps from Python.

Builds chains of tiny 1x1 convolutions + ReLU (8 channels, 2x2: the oneDNN work is a few hundred
nanoseconds) ending in a global average pool, compiles them with native segments on and off
(``VINERUN_CPU_NATIVE``), and fits ``time = fixed + steps * per_step`` from two chain lengths.

    python benchmarks/step_overhead.py                 # 1 thread, chains of 10 and 50 convolutions
    python benchmarks/step_overhead.py --threads 2 --short 20 --long 100
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.convolution import Convolution
from vinerun.ops.pooling import AvgPool

ONE_BY_ONE = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}


def chain(n: int, seed: int = 0) -> Model:
    """``n`` 1x1 convolutions + ReLU on [1, 8, 2, 2], then a global average pool: ``n + 1`` plan steps."""
    rng = np.random.default_rng(seed)
    x = Parameter(Type.f32, [1, 8, 2, 2])
    y = x
    for _ in range(n):
        w = (rng.standard_normal((8, 8, 1, 1)) * 0.3).astype(np.float32)
        y = Relu(Convolution(y, Constant(w), **ONE_BY_ONE))
    return Model([AvgPool(y, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[2, 2])], [x])


def median_run_us(n: int, threads: int, calls: int) -> float:
    """Median microseconds of ``plan.run`` for a chain of ``n`` convolutions."""
    config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": threads}
    plan = ov.Core().compile_model(chain(n), "CPU", config)._impl.plan
    x = [np.random.default_rng(1).random((1, 8, 2, 2), dtype=np.float32)]
    for _ in range(200):
        plan.run(x)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        plan.run(x)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--short", type=int, default=10, help="convolutions in the short chain")
    p.add_argument("--long", type=int, default=50, help="convolutions in the long chain")
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    for native in ("1", "0"):
        os.environ["VINERUN_CPU_NATIVE"] = native
        short, long_ = (median_run_us(n, args.threads, args.calls) for n in (args.short, args.long))
        per_step = (long_ - short) / (args.long - args.short)
        fixed = short - (args.short + 1) * per_step
        label = "native segment" if native == "1" else "Python steps  "
        print(f"{label}: {args.short + 1} steps {short:6.1f} us, {args.long + 1} steps {long_:6.1f} us -> "
              f"{per_step:.2f} us a step, {fixed:.1f} us fixed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
