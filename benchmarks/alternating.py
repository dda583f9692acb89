"""vinerun against openvino by alternating single calls: the measure for a noisy shared machine.

Compiles the model (a ``model_zoo`` or ``int8_models`` name, built in ``--folder`` if needed) on both runtimes
with the same hint, thread count and precision, then calls ``infer`` on each in turn (vinerun, openvino,
openvino, vinerun, ...: the order flips every pair), so a slow minute slows both alike. Prints each runtime's
p10 and median call time and the ratios vinerun / openvino: of the p10s, of the medians, and the median of the
per-pair ratios (the figure the benchmarks README quotes as "alternating calls").

    python benchmarks/alternating.py resnet50-int8 --threads 1 --calls 300 --folder /tmp/zoo
    python benchmarks/alternating.py mobilenetv2 --precision bf16 --threads 2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_models import INT8_MODELS  # noqa: E402
from model_zoo import MODELS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", choices=sorted({**MODELS, **INT8_MODELS}))
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun-bench"))
    p.add_argument("--precision", default="default", help="INFERENCE_PRECISION_HINT, or 'default' (none given)")
    p.add_argument("--threads", type=int, default=0, help="INFERENCE_NUM_THREADS (0: the hint's choice)")
    p.add_argument("--hint", default="LATENCY")
    p.add_argument("--calls", type=int, default=300, help="calls per runtime")
    args = p.parse_args(argv)

    import openvino

    import vinerun

    spec = MODELS.get(args.model) or INT8_MODELS[args.model]
    os.makedirs(args.folder, exist_ok=True)
    path, feed = spec.build(args.folder), spec.inputs()
    config: dict = {"PERFORMANCE_HINT": args.hint}
    if args.threads:
        config["INFERENCE_NUM_THREADS"] = args.threads
    if args.precision != "default":
        config["INFERENCE_PRECISION_HINT"] = args.precision
    requests = []
    for runtime in (vinerun, openvino):
        request = runtime.Core().compile_model(path, "CPU", dict(config)).create_infer_request()
        for _ in range(5):
            request.infer(feed)
        requests.append(request)
    times = np.zeros((2, args.calls))
    for i in range(args.calls):
        for k in ((0, 1) if i % 2 == 0 else (1, 0)):
            start = time.perf_counter()
            requests[k].infer(feed)
            times[k, i] = time.perf_counter() - start
    ms = times * 1e3
    p10, median = np.percentile(ms, 10, axis=1), np.median(ms, axis=1)
    print(f"{args.model} precision={args.precision} threads={args.threads or 'hint'}: "
          f"vinerun p10 {p10[0]:.3f} ms, median {median[0]:.3f} | openvino p10 {p10[1]:.3f} ms, median "
          f"{median[1]:.3f} | vinerun / openvino: p10 {p10[0] / p10[1]:.3f}, median {median[0] / median[1]:.3f}, "
          f"per-pair median {np.median(ms[0] / ms[1]):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
