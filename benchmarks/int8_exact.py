"""How far each runtime's int8 output is from the model's exact arithmetic: vinerun and openvino (default precision
and the f32 hint) against vinerun's NumPy reference interpreter (every FakeQuantize / Q-DQ rounding done exactly),
in steps of the output (its range / 255), on the model's input and two perturbed copies. Also vinerun against
openvino: the measure of issue 18's Must-show 3, which adds both runtimes' own deviations.

    python benchmarks/int8_exact.py resnet50-nncf --folder /tmp/zoo
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_models import INT8_MODELS, perturbed_feeds  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", choices=sorted(INT8_MODELS))
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun-bench"))
    p.add_argument("--inputs", type=int, default=3, help="the model's input and this many - 1 perturbed copies")
    args = p.parse_args(argv)

    import openvino

    import vinerun
    from vinerun.ir.interpreter import run_reference

    spec = INT8_MODELS[args.model]
    path = spec.build(args.folder)
    feeds = perturbed_feeds(spec.inputs(), args.inputs, 0.1, seed=1)
    model = vinerun.Core().read_model(path)
    runs = {f"{name} {label}": runtime.Core().compile_model(path, "CPU", config)
            for name, runtime in (("vinerun", vinerun), ("openvino", openvino))
            for label, config in (("default", {}), ("f32 hint", {"INFERENCE_PRECISION_HINT": "f32"}))}
    print(f"{args.model}: max |output - exact| in output steps (range / 255)")
    for i, feed in enumerate(feeds):
        exact = run_reference(model, list(feed.values()))[0].astype(np.float64)
        step = (exact.max() - exact.min()) / 255
        outs = {k: np.asarray(c(feed)[0], np.float64) for k, c in runs.items()}
        cells = [f"{k} {np.abs(v - exact).max() / step:.2f}" for k, v in outs.items()]
        between = np.abs(outs["vinerun default"] - outs["openvino default"]).max() / step
        print(f"input {i}: " + ", ".join(cells) + f"; vinerun vs openvino {between:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
