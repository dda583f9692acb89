"""Which kernel runs each convolution and matmul of a quantized model on vinerun's CPU (Must-show 5: every
quantized Convolution / MatMul on an ``_int8`` kernel).

Compiles the model (an ``int8_models`` name, built in ``--folder`` if needed, or a file) with ``PERF_COUNT``,
runs one inference, and prints:

- the model's own Convolution / GroupConvolution / MatMul nodes as vinerun reads them (ONNX Gemm reads as MatMul),
  each marked quantized when both its inputs come from a quantizer (DequantizeLinear, FakeQuantize, or an integer
  constant through Convert / Subtract / Multiply), with the profile row of the same name where the compile kept
  the name;
- every executed profile row of a convolution or matmul kernel, with its exec type and time;
- a verdict: quantized conv/matmul nodes in the model against executed conv/matmul kernels with ``_int8``.

    python benchmarks/int8_profile.py resnet50-int8 --folder /tmp/zoo
    python benchmarks/int8_profile.py /tmp/zoo/resnet50_nncf_int8.xml --check   # exit 1 unless all int8
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from int8_models import INT8_MODELS  # noqa: E402

import vinerun  # noqa: E402

HEAVY = ("Convolution", "GroupConvolution", "MatMul", "ConvolutionBackpropData", "GroupConvolutionBackpropData")
QUANTIZERS = ("DequantizeLinear", "FakeQuantize")
THROUGH = ("Convert", "Subtract", "Multiply", "Reshape", "Transpose", "Unsqueeze", "Squeeze", "Broadcast")


def from_quantizer(node: Any, depth: int = 6) -> bool:
    """Whether ``node``'s value is (a view / decompression of) a quantizer's output or an integer constant."""
    kind = node.get_type_name()
    if kind in QUANTIZERS:
        return True
    if kind == "Constant":
        return node.get_output_element_type(0).is_integral()
    if kind not in THROUGH or depth == 0:
        return False
    return any(from_quantizer(node.input_value(i).get_node(), depth - 1) for i in range(node.get_input_size())
               if kind not in ("Subtract", "Multiply") or i == 0)


def heavy_nodes(model: Any) -> list[tuple[str, str, bool]]:
    """(friendly name, type, quantized) of every convolution / matmul of ``model``."""
    return [(op.get_friendly_name(), op.get_type_name(),
             all(from_quantizer(op.input_value(i).get_node()) for i in range(2)))
            for op in model.get_ordered_ops() if op.get_type_name() in HEAVY]


def is_heavy_kernel(node_type: str) -> bool:
    """A profile row of a convolution or matmul kernel (node types as vinerun and openvino write them; "Convert"
    is not one)."""
    return any(word in node_type for word in ("Convolution", "MatMul", "FullyConnected", "Gemm", "Deconvolution"))


def profile(path: str, feed: dict[str, np.ndarray]) -> tuple[list[tuple[str, str, bool]], list[Any]]:
    core = vinerun.Core()
    model = core.read_model(path)
    compiled = core.compile_model(model, "CPU", {"PERFORMANCE_HINT": "LATENCY", "PERF_COUNT": True})
    request = compiled.create_infer_request()
    request.infer(feed)
    return heavy_nodes(model), list(request.profiling_info)


def report(nodes: list[tuple[str, str, bool]], rows: list[Any], verbose: bool) -> bool:
    """Prints the tables and the verdict; returns whether every quantized conv/matmul ran an ``_int8`` kernel."""
    by_name = {r.node_name: r for r in rows}
    kernels = [r for r in rows if is_heavy_kernel(r.node_type) and str(r.status).endswith("EXECUTED")]
    if verbose:
        print("| model node | type | quantized | profile row (same name) | exec type |\n|---|---|---|---|---|")
        for name, kind, quantized in nodes:
            row = by_name.get(name) or next((r for r in rows if r.node_name.startswith(name + "/")), None)
            print(f"| {name} | {kind} | {'yes' if quantized else 'no'} | {row.node_name if row else '(renamed)'} "
                  f"| {row.exec_type if row else ''} |")
        print()
    print("| profile row | type | exec type | int8 | ms |\n|---|---|---|---|---|")
    for r in kernels:
        ms = r.real_time.total_seconds() * 1e3
        print(f"| {r.node_name} | {r.node_type} | {r.exec_type} | {'yes' if r.exec_type.endswith('_int8') else 'NO'} "
              f"| {ms:.3f} |")
    quantized = sum(q for _, _, q in nodes)
    int8 = [r for r in kernels if r.exec_type.endswith("_int8")]
    other = [f"{r.node_name} ({r.exec_type})" for r in kernels if not r.exec_type.endswith("_int8")]
    ok = len(int8) >= quantized and quantized > 0
    print(f"\nmodel: {len(nodes)} conv/matmul nodes, {quantized} quantized; profile: {len(kernels)} executed "
          f"conv/matmul kernels, {len(int8)} _int8" + (f"; not int8 ({len(other)}): {', '.join(other[:8])}"
                                                        + (" ..." if len(other) > 8 else "") if other else ""))
    print("verdict: every quantized conv/matmul on an _int8 kernel" if ok else
          f"verdict: NOT all int8 ({len(int8)} _int8 kernels for {quantized} quantized nodes)")
    return ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help=f"a file, or one of {sorted(INT8_MODELS)}")
    p.add_argument("--folder", default="/tmp/vinerun-bench", help="where int8_models builds (and finds) its files")
    p.add_argument("--nodes", action="store_true", help="also list the model's conv/matmul nodes one by one")
    p.add_argument("--check", action="store_true", help="exit 1 unless every quantized conv/matmul runs in int8")
    args = p.parse_args(argv)
    spec = INT8_MODELS.get(args.model)
    path = spec.build(args.folder) if spec else args.model
    if spec:
        feed = spec.inputs()
    else:
        model = vinerun.Core().read_model(path)
        feed = {i.get_any_name(): np.random.default_rng(0).standard_normal(list(i.get_shape())).astype(np.float32)
                for i in model.inputs}
    print(f"{path} on vinerun {vinerun.__version__} CPU\n")
    ok = report(*profile(path, feed), args.nodes)
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
