"""First-inference time (read + compile + first infer) with and without CACHE_DIR, vinerun and openvino.

Builds a ResNet-50-shaped ONNX file (torchvision layout: Conv, BatchNormalization, Relu, residual
Add, GlobalAveragePool, Gemm; 25.6 M parameters from a fixed seed), then times each contender in a
fresh Python process (so nothing is warm but the OS file cache), interleaved in turns:

- vinerun without a cache:        read_model(path) -> compile_model -> infer
- vinerun with a warm CACHE_DIR:  compile_model(path, config={"CACHE_DIR": d}) -> infer
- the same two for openvino (f32, to match vinerun), on the same file, with its own CACHE_DIR.

Usage::

    python benchmarks/cache_first_inference.py [--repeats 5] [--workdir /tmp/vinerun_cache_bench]

Prints the median of each and the without/with ratios. Timings on a shared machine are noisy:
repeat before believing small differences.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CONTENDERS = ("vinerun", "vinerun+cache", "openvino", "openvino+cache")


def resnet50_onnx(path: Path, seed: int = 0) -> None:
    """Write a ResNet-50-shaped model (input ``data`` [1,3,224,224] -> ``logits`` [1,1000])."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    r = np.random.default_rng(seed)
    nodes: list = []
    inits: list = []
    counter = [0]

    def name(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def conv_bn(x: str, cin: int, cout: int, k: int, stride: int, relu: bool) -> str:
        w = name("w")
        inits.append(numpy_helper.from_array(
            (r.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32), w))
        y = name("conv")
        nodes.append(helper.make_node("Conv", [x, w], [y], kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        bn = [name(p) for p in ("scale", "bias", "mean", "var")]
        for n, v in zip(bn, (1.0 + 0.1 * r.standard_normal(cout), 0.1 * r.standard_normal(cout),
                             0.1 * r.standard_normal(cout), 1.0 + 0.1 * r.random(cout)), strict=True):
            inits.append(numpy_helper.from_array(v.astype(np.float32), n))
        z = name("bn")
        nodes.append(helper.make_node("BatchNormalization", [y, *bn], [z], epsilon=1e-5))
        if not relu:
            return z
        out = name("relu")
        nodes.append(helper.make_node("Relu", [z], [out]))
        return out

    x = conv_bn("data", 3, 64, 7, 2, True)
    pooled = name("pool")
    nodes.append(helper.make_node("MaxPool", [x], [pooled], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
    x, cin = pooled, 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            s = stride if b == 0 else 1
            y = conv_bn(conv_bn(conv_bn(x, cin, width, 1, 1, True), width, width, 3, s, True), width, width * 4, 1, 1,
                        False)
            skip = conv_bn(x, cin, width * 4, 1, s, False) if b == 0 else x
            added, out = name("add"), name("relu")
            nodes += [helper.make_node("Add", [y, skip], [added]), helper.make_node("Relu", [added], [out])]
            x, cin = out, width * 4
    gap, flat = name("gap"), name("flat")
    nodes += [helper.make_node("GlobalAveragePool", [x], [gap]), helper.make_node("Flatten", [gap], [flat])]
    inits.append(numpy_helper.from_array((r.standard_normal((1000, 2048)) * 0.02).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", [flat, "fc_w", "fc_b"], ["logits"], transB=1))
    graph = helper.make_graph(nodes, "resnet50",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="vinerun-bench")
    onnx.save(model, str(path))


def run_one(contender: str, model: str, cache_dir: str) -> dict[str, float]:
    """In this process: time the first inference of ``contender`` (imports are done before the clock)."""
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    if contender.startswith("vinerun"):
        import vinerun as ov
    else:
        import openvino as ov
    core = ov.Core()
    config = {} if contender.startswith("vinerun") else {"INFERENCE_PRECISION_HINT": "f32"}
    t0 = time.perf_counter()
    if contender.endswith("+cache"):
        core.set_property({"CACHE_DIR": cache_dir})
        compiled = core.compile_model(model, "CPU", config)
        t1 = t0
    else:
        m = core.read_model(model)
        t1 = time.perf_counter()
        compiled = core.compile_model(m, "CPU", config)
    t2 = time.perf_counter()
    out = compiled(x)[0]
    t3 = time.perf_counter()
    loaded = bool(compiled.get_property("LOADED_FROM_CACHE"))
    return {"read": t1 - t0, "compile": t2 - t1, "infer": t3 - t2, "total": t3 - t0, "loaded_from_cache": loaded,
            "checksum": float(np.asarray(out, np.float64).sum())}


def measure(contender: str, model: Path, cache_dir: Path) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--one", contender, "--model", str(model), "--cache-dir", str(cache_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--workdir", default="/tmp/vinerun_cache_bench")
    ap.add_argument("--one", choices=CONTENDERS, help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.model, args.cache_dir)))
        return
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    model = work / "resnet50.onnx"
    if not model.exists():
        resnet50_onnx(model)
    print(f"model: {model} ({model.stat().st_size / 1e6:.1f} MB)")
    caches = {c: work / f"cache_{c.split('+')[0]}" for c in CONTENDERS}
    for c in ("vinerun+cache", "openvino+cache"):  # fill the caches (a cold run: compile + write the blob)
        for old in caches[c].glob("*"):
            old.unlink()
        cold = measure(c, model, caches[c])
        print(f"{c:16s} cold (miss, writes the blob): {cold['total'] * 1e3:8.0f} ms")
    runs: dict[str, list[dict[str, float]]] = {c: [] for c in CONTENDERS}
    for _ in range(args.repeats):
        for c in CONTENDERS:
            runs[c].append(measure(c, model, caches[c]))
    print(f"\nfirst inference, median of {args.repeats} fresh processes (ms):")
    print(f"{'':16s} {'read':>8s} {'compile':>8s} {'infer':>8s} {'total':>8s}  from cache")
    med = {}
    for c in CONTENDERS:
        med[c] = {k: statistics.median(r[k] for r in runs[c]) for k in ("read", "compile", "infer", "total")}
        hit = all(r["loaded_from_cache"] for r in runs[c])
        print(f"{c:16s} " + " ".join(f"{med[c][k] * 1e3:8.0f}" for k in ("read", "compile", "infer", "total"))
              + f"  {hit}")
    for name in ("vinerun", "openvino"):
        print(f"{name}: without / with cache = {med[name]['total'] / med[name + '+cache']['total']:.2f}x")
    print(f"vinerun+cache / openvino+cache = {med['vinerun+cache']['total'] / med['openvino+cache']['total']:.2f}x")
    same = {c: {r["checksum"] for r in runs[c]} for c in CONTENDERS}
    print(f"vinerun outputs identical with and without cache: {same['vinerun'] == same['vinerun+cache']}")


if __name__ == "__main__":
    main()
