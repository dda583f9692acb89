"""bf16 error over several inputs, vinerun beside openvino: each runtime's bf16 output against openvino's f32 output
(largest absolute difference over the output's largest magnitude, as compare.py's "agrees" column), for the zoo
model's own input and noisy / mirrored variants of it.

One input can make either runtime look worse: where a network amplifies rounding (detectors, CTC recognizers,
squeeze-excite gates), both runtimes exceed the bf16 tolerance on some inputs, and which one is worse changes from
input to input. The mean and the worst over the inputs say how the two compare.

    python benchmarks/bf16_spread.py ppocr-det ppocr-rec --inputs 8
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo  # noqa: E402
from compare import relative_diff  # noqa: E402  (compare.py's "agrees" measure)

import vinerun  # noqa: E402


def variants(feed: dict[str, np.ndarray], count: int, seed: int = 1) -> list[dict[str, np.ndarray]]:
    """``feed``, a mirrored copy, then copies with Gaussian noise (10% of each float input's spread)."""
    rng = np.random.default_rng(seed)

    def floats(fn):  # noqa: ANN001, ANN202
        return {k: fn(v) if v.dtype == np.float32 else v for k, v in feed.items()}

    out = [feed, floats(lambda v: np.ascontiguousarray(v[..., ::-1]))]
    while len(out) < count:
        out.append(floats(lambda v: (v + rng.normal(0, 0.1 * (float(v.std()) or 1.0), v.shape)).astype(np.float32)))
    return out[:count]


def main() -> int:
    import openvino

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", choices=sorted(model_zoo.MODELS))
    ap.add_argument("--inputs", type=int, default=8, help="inputs per model (default 8)")
    ap.add_argument("--folder", default="/tmp/zoo")
    args = ap.parse_args()
    print("| model | vinerun bf16 mean / worst | openvino bf16 mean / worst | inputs where vinerun is closer |")
    print("|---|---|---|---|")
    for name in args.models:
        spec = model_zoo.MODELS[name]
        path = spec.build(args.folder)
        f32 = openvino.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        theirs = openvino.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
        ours = vinerun.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
        mine, other = [], []
        for feed in variants(spec.inputs(), args.inputs):
            want = list(f32(feed).values())
            mine.append(relative_diff(list(ours(feed).values()), want))
            other.append(relative_diff(list(theirs(feed).values()), want))
        closer = sum(m <= o for m, o in zip(mine, other, strict=True))
        print(f"| {name} | {np.mean(mine):.3f} / {max(mine):.3f} | {np.mean(other):.3f} / {max(other):.3f} | "
              f"{closer} of {len(mine)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
