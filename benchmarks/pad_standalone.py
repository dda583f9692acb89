"""A Pad that stays in the graph (reflect / edge padding, or a constant pad before a non-convolution):
``Pad([1, 64, 112, 112], 1 pixel each side) -> Relu``, vinerun vs openvino f32, LATENCY, one request.

Turns interleave the two runtimes (``--rounds`` turns of ``--calls`` calls each); the figure is the median
turn's time per call. Outputs are compared for equality.

    python benchmarks/pad_standalone.py --rounds 7 --calls 30
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import vinerun


def build(lib, mode: str, shape: list[int]):
    ops = lib.opset13
    x = ops.parameter(shape, lib.Type.f32, name="x")
    pads = ops.constant(np.array([0, 0, 1, 1], np.int64))
    return lib.Model([ops.relu(ops.pad(x, pads, pads, mode)).output(0)], [x], f"pad_{mode}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--shape", type=int, nargs=4, default=[1, 64, 112, 112])
    args = parser.parse_args(argv)
    import openvino

    x = np.random.default_rng(1).standard_normal(args.shape).astype(np.float32)
    print("| mode | vinerun us | openvino us | vinerun / openvino | same output |")
    print("|---|---|---|---|---|")
    for mode in ("constant", "reflect", "edge"):
        requests = {}
        for name, lib in (("vinerun", vinerun), ("openvino", openvino)):
            model = build(lib, mode, args.shape)
            compiled = lib.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            requests[name] = compiled.create_infer_request()
            for _ in range(10):
                requests[name].infer({"x": x})
        turns: dict[str, list[float]] = {name: [] for name in requests}
        for _ in range(args.rounds):
            for name, request in requests.items():
                start = time.perf_counter()
                for _ in range(args.calls):
                    request.infer({"x": x})
                turns[name].append((time.perf_counter() - start) / args.calls * 1e6)
        ours, theirs = statistics.median(turns["vinerun"]), statistics.median(turns["openvino"])
        same = np.array_equal(requests["vinerun"].get_output_tensor(0).data,
                              requests["openvino"].get_output_tensor(0).data)
        print(f"| {mode} | {ours:.0f} | {theirs:.0f} | {ours / theirs:.2f} | {same} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
