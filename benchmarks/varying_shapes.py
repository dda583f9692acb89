"""A dynamic-shape model fed inputs whose size varies from call to call, as an OCR pipeline feeds its recogniser
(text lines of different widths) or its detector (pages of different sizes): vinerun against openvino on the
same file, calls alternated, each shape recurring. Prints each runtime's first-call times (a shape's first call
builds kernels) and, over the recurring calls, the per-pair median ratio and the total time.

    python benchmarks/varying_shapes.py ppocr-rec --sizes 20 --calls 200 --folder /tmp/zoo
    python benchmarks/varying_shapes.py ppocr-det --sizes 8 --calls 80 --precision bf16 --folder /tmp/zoo
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_zoo import MODELS  # noqa: E402

#: per model: the axes that vary (NCHW images) and the multiple their sizes keep: a recogniser's text line width
#: (any), a detector's page sides (its network downsamples by 32)
VARYING = {"ppocr-rec": ((3,), 8), "ppocr-det": ((2, 3), 32), "ppocr-cls": ((3,), 8)}


def shapes(base: tuple[int, ...], axes: tuple[int, ...], multiple: int, count: int,
           rng: np.random.Generator) -> list[tuple]:
    """``count`` distinct shapes: ``base`` with the varying axes drawn, in multiples of ``multiple``, from half to
    1.5 times their size in ``base``."""
    choices = [range(base[a] // 2 // multiple, base[a] * 3 // 2 // multiple + 1) for a in axes]
    if count > int(np.prod([len(c) for c in choices])):
        raise SystemExit(f"--sizes {count}: only {int(np.prod([len(c) for c in choices]))} distinct shapes")
    out: set[tuple[int, ...]] = set()
    while len(out) < count:
        shape = list(base)
        for axis, sizes in zip(axes, choices, strict=True):
            shape[axis] = multiple * int(rng.choice(sizes))
        out.add(tuple(shape))
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", choices=sorted(VARYING))
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun-bench"))
    p.add_argument("--sizes", type=int, default=20, help="distinct input shapes")
    p.add_argument("--calls", type=int, default=200, help="calls per runtime, the shapes in turn")
    p.add_argument("--precision", choices=("f32", "bf16"), default="f32")
    p.add_argument("--threads", type=int, default=0, help="INFERENCE_NUM_THREADS (0: each runtime's default)")
    args = p.parse_args(argv)

    import openvino

    import vinerun

    spec = MODELS[args.model]
    path = spec.build(args.folder)
    (name, base), = spec.inputs().items()
    rng = np.random.default_rng(0)
    sizes = shapes(base.shape, *VARYING[args.model], args.sizes, rng)
    feeds = [rng.standard_normal(shape).astype(np.float32) for shape in sizes]
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": args.precision}
    if args.threads:
        config["INFERENCE_NUM_THREADS"] = args.threads
    requests = {label: runtime.Core().compile_model(path, "CPU", config).create_infer_request()
                for label, runtime in (("vinerun", vinerun), ("openvino", openvino))}
    times: dict[str, list[float]] = {label: [] for label in requests}
    for i in range(args.calls):
        order = list(requests) if i % 2 == 0 else list(requests)[::-1]
        for label in order:
            start = time.perf_counter()
            requests[label].infer({name: feeds[i % len(feeds)]})
            times[label].append(time.perf_counter() - start)
    first = {label: np.array(t[:len(feeds)]) * 1e3 for label, t in times.items()}
    rest = {label: np.array(t[len(feeds):]) * 1e3 for label, t in times.items()}
    print(f"{args.model} {args.precision}: {len(sizes)} shapes ({sizes[0]} .. {sizes[-1]}), {args.calls} calls each")
    for label in requests:
        print(f"  {label:8s} first calls {np.median(first[label]):7.1f} ms median, {first[label].max():7.1f} max; "
              f"recurring {np.median(rest[label]):7.1f} ms median, total {np.sum(times[label]):.2f} s")
    if len(rest["vinerun"]):
        ratio = np.median(rest["vinerun"] / rest["openvino"])
        print(f"  vinerun / openvino: recurring per-pair median {ratio:.2f}, first calls "
              f"{np.median(first['vinerun'] / first['openvino']):.2f}, total "
              f"{np.sum(times['vinerun']) / np.sum(times['openvino']):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
