"""The CPU's bf16 attention kernel alone: one FusedAttention node (a split ``[B, S, H*D]`` q/k/v, heads merged on
the way out, as in BERT), its profiling counter per call, on AMX tiles and on the AVX512-BF16 path
(``VINERUN_CPU_AMX=0``, in a child process), beside PyTorch's ``scaled_dot_product_attention`` in bf16 on the
same inputs (a call's wall time, which includes ~10 us of PyTorch's dispatch).

    python benchmarks/attention_kernel.py                       # BERT-base-like 12 heads of 32 / 64, 128 tokens
    python benchmarks/attention_kernel.py --shapes 1x384x12x64 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def kernel_times(b: int, s: int, h: int, d: int, threads: int, calls: int) -> dict[str, float]:
    """p10 / median of the node's counter (us) and the exec type profiling reports."""
    import vinerun as ov
    from vinerun.ir.core_ops import Parameter
    from vinerun.ir.model import Model
    from vinerun.ir.types import Type
    from vinerun.plugins.cpu.kernels._torch import BF16
    from vinerun.transformations.fused_transformer import FusedAttention

    params = [Parameter(Type.bf16, [b, s, h * d]) for _ in range(3)]
    node = FusedAttention(params, heads=h, split="qkv", merge=True, scale=d ** -0.5)
    compiled = ov.Core().compile_model(Model([node], params), "CPU", {
        "INFERENCE_PRECISION_HINT": "bf16", "INFERENCE_NUM_THREADS": threads, "PERF_COUNT": True})
    rng = np.random.default_rng(0)
    feed = {i: rng.standard_normal((b, s, h * d)).astype(np.float32).astype(BF16) for i in range(3)}
    request = compiled.create_infer_request()
    times, exec_type = [], ""
    for _ in range(calls):
        request.infer(feed)
        info = [p for p in request.profiling_info if p.node_type == "FusedAttention"]
        times.append(sum(p.real_time.total_seconds() for p in info) * 1e6)
        exec_type = info[0].exec_type
    return {"p10": float(np.percentile(times, 10)), "median": float(np.median(times)), "exec_type": exec_type}


def torch_times(b: int, s: int, h: int, d: int, threads: int, calls: int) -> dict[str, float]:
    import torch

    torch.set_num_threads(threads)
    q, k, v = (torch.randn(b, s, h, d).to(torch.bfloat16).transpose(1, 2) for _ in range(3))
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, h * d)
        times.append((time.perf_counter() - t0) * 1e6)
    return {"p10": float(np.percentile(times, 10)), "median": float(np.median(times)), "exec_type": "sdpa"}


def in_child(shape: tuple[int, ...], threads: int, calls: int, amx: bool) -> dict[str, float]:
    """``kernel_times`` in a fresh process (the AMX switch is read once per process)."""
    env = {**os.environ, "VINERUN_CPU_AMX": "1" if amx else "0"}
    out = subprocess.run([sys.executable, __file__, "--child", "x".join(map(str, shape)), "--threads", str(threads),
                          "--calls", str(calls)], env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", nargs="+", default=["1x128x12x32", "1x128x12x64"], help="BxSxHxD")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        b, s, h, d = (int(x) for x in args.child.split("x"))
        print(json.dumps(kernel_times(b, s, h, d, args.threads, args.calls)))
        return 0
    print(f"bf16 attention, {args.threads} thread(s), {args.calls} calls: p10 / median us per call")
    for text in args.shapes:
        shape = tuple(int(x) for x in text.split("x"))
        amx, avx = in_child(shape, args.threads, args.calls, True), in_child(shape, args.threads, args.calls, False)
        ref = torch_times(*shape, args.threads, args.calls)
        print(f"{text}: vinerun {amx['exec_type']} {amx['p10']:.0f} / {amx['median']:.0f}, "
              f"{avx['exec_type']} {avx['p10']:.0f} / {avx['median']:.0f}, "
              f"torch sdpa {ref['p10']:.0f} / {ref['median']:.0f}; "
              f"vinerun / sdpa (p10) {amx['p10'] / ref['p10']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
