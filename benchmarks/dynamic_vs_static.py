"""A model with dynamic axes called repeatedly at one shape, against the same model reshaped to that static shape
(vinerun only, f32, LATENCY hint, one request each, interleaved turns; median turn's time per call).

The dynamic model serves its first calls from the dynamic plan; once they took about as long as a compile, a
call compiles the plan specialized to their shape (``plugin_api/specialize.py``); the figure is taken after
warm-up calls that last at least twice the dynamic model's compile time (30 calls at least).

    python benchmarks/dynamic_vs_static.py bert-hf-sdpa gpt2-hf-eager ppocr-rec
"""

from __future__ import annotations

import argparse
import statistics
import time

import model_zoo

import vinerun


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", choices=sorted(model_zoo.MODELS))
    parser.add_argument("--folder", default="/tmp/vinerun_zoo")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args(argv)
    config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
    print("| model | dynamic ms | static ms | dynamic / static |")
    print("|---|---|---|---|")
    for name in args.models:
        spec = model_zoo.MODELS[name]
        path, feed = spec.build(args.folder), spec.inputs()
        core = vinerun.Core()
        static_model = core.read_model(path)
        static_model.reshape({k: list(v.shape) for k, v in feed.items()})
        start = time.perf_counter()
        requests = {"dynamic": core.compile_model(path, "CPU", config).create_infer_request()}
        warm_up = 2 * (time.perf_counter() - start)
        requests["static"] = core.compile_model(static_model, "CPU", config).create_infer_request()
        for request in requests.values():
            start, calls = time.perf_counter(), 0
            while calls < 30 or time.perf_counter() - start < warm_up:
                request.infer(feed)
                calls += 1
        turns: dict[str, list[float]] = {k: [] for k in requests}
        for _ in range(args.rounds):
            for kind, request in requests.items():
                start = time.perf_counter()
                for _ in range(args.calls):
                    request.infer(feed)
                turns[kind].append((time.perf_counter() - start) / args.calls * 1e3)
        dynamic, static = statistics.median(turns["dynamic"]), statistics.median(turns["static"])
        print(f"| {name} | {dynamic:.2f} | {static:.2f} | {dynamic / static:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
