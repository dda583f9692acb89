"""Winograd F(4x4, 3x3) against oneDNN's direct convolution, layer by layer: where does it pay?

For square inputs of 7-112 pixels and 16-512 channels (in = out), times one 3x3 stride-1 f32 convolution
(channels-last, bias-free, ReLU) both ways at 1 and 2 threads, interleaved in short blocks (A B A B: a busy
moment of the shared machine hits both), and prints the ratio of the median call times:
direct / Winograd (above 1: Winograd is faster). ``conv_winograd.pays`` encodes the result. The filters stay hot
in cache here; inside a network they come from memory (see the per-layer profile in benchmarks/README.md).

    python benchmarks/winograd_sweep.py
    python benchmarks/winograd_sweep.py --sizes 14 28 --channels 128 256 --threads 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vinerun.plugins.cpu.kernels._dnnl import ELTWISE, Conv2d, data_address, library
from vinerun.plugins.cpu.kernels.conv_winograd import WinogradConv2d, pays
from vinerun.plugins.cpu.thread_governor import set_thread_count

RELU = [("eltwise", ELTWISE["relu"], 0.0, 0.0)]


def interleaved_ratio(a, b, calls: int, blocks: int = 9) -> float:
    """median call time of ``a`` / that of ``b``, the two called in alternating blocks of ``calls``."""
    times: dict[int, list[float]] = {0: [], 1: []}
    for fn in (a, b):  # warm-up: primitives made, caches filled
        for _ in range(3):
            fn()
    for _ in range(blocks):
        for i, fn in enumerate((a, b)):
            for _ in range(calls):
                t0 = time.perf_counter()
                fn()
                times[i].append(time.perf_counter() - t0)
    return float(np.median(times[0]) / np.median(times[1]))


def ratio(size: int, channels: int, threads: int, rng: np.random.Generator) -> float:
    """direct / Winograd median call time of one layer."""
    lib = library()
    w = (rng.standard_normal((channels, channels, 3, 3)) / np.sqrt(9 * channels)).astype(np.float32)
    x = rng.standard_normal((1, size, size, channels)).astype(np.float32)
    y = np.empty_like(x)
    shape = (1, channels, size, size)
    direct = Conv2d(lib, w, None, 1, shape, shape, [1, 1], [1, 1], [1, 1], [1, 1], RELU)
    winograd = WinogradConv2d(lib, w, None, shape, RELU)
    calls = max(3, min(30, int(2e6 / (size * size * channels * channels * 9))))
    key = (threads, True)
    return interleaved_ratio(lambda: direct(key, data_address(x), data_address(y)),
                             lambda: winograd(key, data_address(x), data_address(y)), calls)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[7, 10, 14, 28, 56, 112])
    p.add_argument("--channels", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = p.parse_args()
    if library() is None:
        raise SystemExit("needs the oneDNN binding (onednn-cpu-gomp)")
    rng = np.random.default_rng(0)
    print("direct / Winograd (above 1: Winograd faster); * = pays() chooses Winograd")
    print("threads size " + " ".join(f"{c:>7d}" for c in args.channels))
    for threads in args.threads:
        set_thread_count(threads)
        for size in args.sizes:
            cells = []
            for c in args.channels:
                if size * size * c > 56 * 56 * 256:  # a bigger layer than any measured network has
                    cells.append(f"{'-':>7s}")
                    continue
                mark = "*" if pays((1, c, size, size), c) else " "
                cells.append(f"{ratio(size, c, threads, rng):6.2f}{mark}")
            print(f"{threads:7d} {size:4d} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
