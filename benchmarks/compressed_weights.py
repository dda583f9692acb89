"""Weight-only compression: a GPT-2-style model (transformers' GPT2 from a config, random weights) converted to
OpenVINO IR and compressed by NNCF's ``compress_weights`` (INT8_ASYM; INT4_SYM group 128), run by vinerun and
openvino on the same IR: latency (interleaved turns, medians) for a token step (1 and 8 tokens) and a 128-token
prompt, outputs against openvino's, and the RSS growth of compiling (each compile in a fresh child process) against
the f32 model's.

    .venv/bin/python benchmarks/compressed_weights.py --dir /tmp/gpt2 --layers 6
    .venv/bin/python benchmarks/compressed_weights.py --dir /tmp/gpt2 --seq 1 --dq 0   # activations not quantized

Test and bench dependencies only: torch, transformers, openvino, nncf.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("f32", "int8_asym", "int4_sym")


def make_models(out: Path, layers: int) -> None:
    """The f32 IR and its two NNCF-compressed versions under ``out`` (kept if already there)."""
    if all((out / f"gpt2_{m}.xml").exists() for m in MODES):
        return
    import nncf
    import openvino as ov
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=layers, use_cache=False)
    cfg._attn_implementation = "eager"
    model = GPT2LMHeadModel(cfg).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            return self.m(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).logits

    out.mkdir(parents=True, exist_ok=True)
    ovm = ov.convert_model(Logits(), example_input=torch.randint(0, cfg.vocab_size, (1, 8)), input=[(1, -1)])
    ov.save_model(ovm, str(out / "gpt2_f32.xml"), compress_to_fp16=False)
    for mode, kw in (("int8_asym", {"mode": nncf.CompressWeightsMode.INT8_ASYM}),
                     ("int4_sym", {"mode": nncf.CompressWeightsMode.INT4_SYM, "group_size": 128, "ratio": 1.0})):
        compressed = nncf.compress_weights(ov.Core().read_model(str(out / "gpt2_f32.xml")), **kw)
        ov.save_model(compressed, str(out / f"gpt2_{mode}.xml"), compress_to_fp16=False)


def _core(runtime: str) -> Any:
    if runtime == "vinerun":
        import vinerun

        return vinerun.Core()
    import openvino

    return openvino.Core()


def compile_model(runtime: str, path: Path, seq: int, config: dict[str, Any]) -> Any:
    core = _core(runtime)
    model = core.read_model(str(path))
    model.reshape({0: [1, seq]})
    return core.compile_model(model, "CPU", config)


def feed(seq: int) -> np.ndarray:
    return np.random.default_rng(seq).integers(0, 50257, (1, seq)).astype(np.int64)


def run_once(request: Any, ids: np.ndarray) -> np.ndarray:
    out = request.infer({0: ids})
    return np.asarray(next(iter(out.values())) if isinstance(out, dict) else out[0])


def latency(paths: dict[str, Path], seq: int, config: dict[str, Any], rounds: int, turn: float) -> dict[str, Any]:
    """Medians (ms) of interleaved turns of every (runtime, mode), and each output against openvino's."""
    ids = feed(seq)
    requests = {(rt, m): compile_model(rt, paths[m], seq, config).create_infer_request()
                for m in paths for rt in ("vinerun", "openvino")}
    outputs = {key: run_once(r, ids) for key, r in requests.items()}
    times: dict[tuple[str, str], list[float]] = {key: [] for key in requests}
    for _ in range(rounds):
        for key, r in requests.items():
            end = time.perf_counter() + turn
            while time.perf_counter() < end:
                t = time.perf_counter()
                r.infer({0: ids})
                times[key].append(time.perf_counter() - t)
    result: dict[str, Any] = {}
    for (rt, m), ts in times.items():
        o, ref = outputs[(rt, m)], outputs[("openvino", m)]
        result[f"{rt} {m}"] = {"ms": 1e3 * float(np.median(ts)), "calls": len(ts),
                               "rel_max_diff_vs_openvino": float(np.abs(o - ref).max() / np.abs(ref).max()),
                               "argmax_agree_vs_openvino": float((o.argmax(-1) == ref.argmax(-1)).mean())}
    return result


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def memory_child(runtime: str, path: str, seq: int, config: str) -> None:
    """In a fresh process: RSS after read_model, after compile + one inference (printed as JSON)."""
    import gc

    if runtime == "vinerun":
        import vinerun  # noqa: F401 - imported before the first reading, as openvino is
    else:
        import openvino  # noqa: F401
    core = _core(runtime)
    model = core.read_model(path)
    model.reshape({0: [1, seq]})
    gc.collect()
    before = rss_mb()
    compiled = core.compile_model(model, "CPU", json.loads(config))
    run_once(compiled.create_infer_request(), feed(seq))
    del model
    gc.collect()
    print(json.dumps({"read_mb": before, "compiled_mb": rss_mb(), "growth_mb": rss_mb() - before}))


def memory(paths: dict[str, Path], seq: int, config: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for m, path in paths.items():
        for rt in ("vinerun", "openvino"):
            proc = subprocess.run([sys.executable, __file__, "--memory-child", rt, str(path), str(seq),
                                   json.dumps(config)], capture_output=True, text=True, check=True)
            out[f"{rt} {m}"] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", type=Path, default=Path("/tmp/vinerun_gpt2"))
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--seq", type=int, nargs="+", default=[1, 8, 128])
    p.add_argument("--precision", default="f32", help="INFERENCE_PRECISION_HINT of both runtimes")
    p.add_argument("--dq", type=int, default=None, help="DYNAMIC_QUANTIZATION_GROUP_SIZE of both (default: theirs)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--turn", type=float, default=0.4, help="seconds per contender per round")
    p.add_argument("--no-memory", action="store_true")
    p.add_argument("--memory-child", nargs=4, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child[0], args.memory_child[1], int(args.memory_child[2]), args.memory_child[3])
        return 0
    make_models(args.dir, args.layers)
    paths = {m: args.dir / f"gpt2_{m}.xml" for m in MODES}
    config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": args.precision}
    if args.dq is not None:
        config["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = args.dq
    report: dict[str, Any] = {"config": config, "cpu_threads": os.cpu_count(), "latency": {}}
    for seq in args.seq:
        report["latency"][seq] = latency(paths, seq, config, args.rounds, args.turn)
        for key, row in report["latency"][seq].items():
            print(f"seq {seq:4d} {key:22s} {row['ms']:8.2f} ms  rel max|diff| vs openvino "
                  f"{row['rel_max_diff_vs_openvino']:.2e}  argmax agree {row['argmax_agree_vs_openvino']:.3f}",
                  flush=True)
    if not args.no_memory:
        report["memory"] = memory(paths, 1, config)
        for key, row in report["memory"].items():
            print(f"memory {key:22s} RSS growth after compile {row['growth_mb']:7.1f} MB", flush=True)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
