"""vinerun's ``GPU`` device against PyTorch on the same GPU: latency, throughput, compile time, memory, accuracy.

Models (random weights, nothing downloaded): torchvision ResNet-50 and MobileNetV2, transformers BERT-base
(from its config: 12 layers, hidden 768, sequence 128). Each is exported once to ONNX with ``torch.onnx.export``
(TorchScript exporter, ``dynamo=False``; dynamic batch and sequence axes); vinerun reads that file and reshapes
it to each static shape. Then in one process, same inputs, per batch (1 and 64) and precision (fp16, f32):

- ``vinerun``: ``GPU`` device (fp16: its default precision; f32: ``INFERENCE_PRECISION_HINT=f32``), inputs and
  outputs as device tensors (no host copies), one synchronous request;
- ``eager``: the PyTorch module (``.half()`` for fp16) under ``torch.inference_mode``;
- ``cuda graph``: the same module captured once with ``torch.cuda.graph`` and replayed (inputs copied in);
- ``torch.compile``: ``mode="reduce-overhead"`` at batch 1 (CUDA graphs), the default mode at larger batches.

Figures: median latency of ``--calls`` calls after warm-up (CUDA events around each call), throughput (items/s),
compile time (read + compile + first inference; for PyTorch, moving the module + capture/compile + first call),
peak GPU memory of the contender (``torch.cuda.max_memory_allocated`` above what was allocated before it),
max |output - PyTorch eager f32 output|, and vinerun's latency ratio to each PyTorch contender. TF32 is off
everywhere, so f32 means f32. Also: BERT with a dynamic sequence (one compiled model, calls alternating two
lengths) and a THROUGHPUT-hint ``AsyncInferQueue`` of batch-1 requests (inferences/s).

Without CUDA it prints "no GPU" and exits 0; ``--stand-in`` runs a tiny CNN and a tiny BERT through the same code
on PyTorch's CPU device (vinerun's test-only GPU stand-in), to check the script itself.

    python benchmarks/gpu/bench.py --quick                    # fp16 only, fewer calls: ~5 min on an H100
    python benchmarks/gpu/bench.py --models resnet50 --batches 1 --precisions fp16 f32
    python benchmarks/gpu/bench.py --stand-in                 # no GPU: the tiny models on the CPU stand-in
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import vinerun as ov  # noqa: E402
from vinerun.plugins.gpu import backend as gpu_backend  # noqa: E402

try:
    import torch
except ImportError:  # vinerun's GPU device needs PyTorch anyway
    torch = None  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------------- models

@dataclass
class ModelDef:
    """A PyTorch model and how to feed and export it. ``inputs(batch, seq)``: CPU tensors (f32 / int64)."""

    name: str
    make: Callable[[], Any]
    inputs: Callable[[int, int], dict[str, Any]]
    output: str
    dynamic: dict[str, dict[int, str]]
    seq: int = 0  # the sequence length of a token model (0: an image model)


class _Hidden(torch.nn.Module if torch else object):  # type: ignore[misc]
    """A transformers encoder as a module of (input_ids, attention_mask) -> last_hidden_state."""

    def __init__(self, net: Any):
        super().__init__()
        self.net = net

    def forward(self, input_ids: Any, attention_mask: Any) -> Any:
        return self.net(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def _images(size: int) -> Callable[[int, int], dict[str, Any]]:
    def inputs(batch: int, seq: int) -> dict[str, Any]:
        g = torch.Generator().manual_seed(1)
        return {"data": torch.randn(batch, 3, size, size, generator=g)}
    return inputs


def _tokens(vocab: int) -> Callable[[int, int], dict[str, Any]]:
    def inputs(batch: int, seq: int) -> dict[str, Any]:
        g = torch.Generator().manual_seed(1)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[:, seq - seq // 8:] = 0  # the last eighth is padding
        return {"input_ids": torch.randint(0, vocab, (batch, seq), generator=g), "attention_mask": mask}
    return inputs


def _torchvision(name: str) -> Callable[[], Any]:
    def make() -> Any:
        try:
            import torchvision
        except ImportError as exc:
            raise RuntimeError("torchvision is not installed") from exc
        torch.manual_seed(0)
        return getattr(torchvision.models, name)(weights=None).eval()
    return make


def _bert(**config: int) -> Callable[[], Any]:
    def make() -> Any:
        try:
            import transformers
        except ImportError as exc:
            raise RuntimeError("transformers is not installed") from exc
        torch.manual_seed(0)
        net = transformers.BertModel(transformers.BertConfig(attn_implementation="sdpa", **config),
                                     add_pooling_layer=False)
        return _Hidden(net).eval()
    return make


class TinyCnn(torch.nn.Module if torch else object):  # type: ignore[misc]
    """The stand-in's image model: conv-BN-ReLU stem, one residual block, pooling, a classifier."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, 1, 1, groups=16), nn.BatchNorm2d(16))
        self.head = nn.Linear(16, 10)

    def forward(self, data: Any) -> Any:
        y = self.stem(data)
        y = torch.relu(self.block(y) + y)
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def _tiny_cnn() -> Any:
    torch.manual_seed(0)
    model = TinyCnn().eval()
    for m in model.modules():  # BatchNorm statistics that are not the identity
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    return model


IMAGE_AXES = {"data": {0: "batch"}, "output": {0: "batch"}}
TOKEN_AXES = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
              "output": {0: "batch", 1: "sequence"}}
MODELS: dict[str, ModelDef] = {
    "resnet50": ModelDef("resnet50", _torchvision("resnet50"), _images(224), "output", IMAGE_AXES),
    "mobilenetv2": ModelDef("mobilenetv2", _torchvision("mobilenet_v2"), _images(224), "output", IMAGE_AXES),
    "bert": ModelDef("bert", _bert(), _tokens(30522), "output", TOKEN_AXES, seq=128),
}
STAND_IN_MODELS: dict[str, ModelDef] = {
    "tinycnn": ModelDef("tinycnn", _tiny_cnn, _images(32), "output", IMAGE_AXES),
    "tinybert": ModelDef("tinybert", _bert(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                                           intermediate_size=128, vocab_size=1000), _tokens(1000), "output",
                         TOKEN_AXES, seq=32),
}


def export(model_def: ModelDef, module: Any, folder: str) -> str:
    """The model as ONNX (opset 17, dynamic axes), written once per folder."""
    path = os.path.join(folder, f"{model_def.name}.onnx")
    if os.path.exists(path):
        return path
    os.makedirs(folder, exist_ok=True)
    feed = model_def.inputs(1, model_def.seq or 1)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(feed.values()), path, input_names=list(feed), output_names=["output"],
                          dynamic_axes=model_def.dynamic, opset_version=17, dynamo=False)
    return path


# ---------------------------------------------------------------------------------------------- timing

@dataclass
class Row:
    model: str
    batch: int
    precision: str
    contender: str
    latency_ms: float | None = None
    throughput: float | None = None  # items per second
    compile_s: float | None = None
    memory_mb: float | None = None
    max_diff: float | None = None
    #: max_diff over the reference's largest magnitude (docs/gpu.md states the f16 tolerance this way)
    rel_diff: float | None = None
    note: str = ""
    ratios: dict[str, float] = field(default_factory=dict)


class Clock:
    """Per-call milliseconds: CUDA events on a GPU, the wall clock on the stand-in."""

    def __init__(self, device: Any):
        self.cuda = device.type == "cuda"
        self.device = device

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def time(self, call: Callable[[], Any], calls: int) -> list[float]:
        times = []
        for _ in range(calls):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                call()
                times.append((time.perf_counter() - t0) * 1e3)
        return times

    def memory_start(self) -> int:
        if not self.cuda:
            return 0
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(self.device)
        return torch.cuda.memory_allocated(self.device)

    def memory_peak(self, base: int) -> float | None:
        return (torch.cuda.max_memory_allocated(self.device) - base) / 2**20 if self.cuda else None


def as_numpy(value: Any) -> np.ndarray:
    """An output (torch tensor, vinerun remote tensor, host array, or a tuple holding one) as f32 on the host."""
    if isinstance(value, (tuple, list)):
        value = value[0]
    if hasattr(value, "torch"):
        value = value.torch
    if hasattr(value, "last_hidden_state"):
        value = value.last_hidden_state
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().float().cpu().numpy()
    return np.asarray(value, dtype=np.float32)


def device_feed(feed: dict[str, Any], device: Any, dtype: Any) -> dict[str, Any]:
    return {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) for k, v in feed.items()}


# ---------------------------------------------------------------------------------------------- contenders

Setup = Callable[[], Callable[[], Any]]


def vinerun_setup(path: str, feed: dict[str, Any], precision: str, device: Any, static: bool = True,
                  config: dict[str, str] | None = None) -> Setup:
    """Read + (reshape) + compile on GPU; the call runs one synchronous request on device tensors."""
    def setup() -> Callable[[], Any]:
        core = ov.Core()
        model = core.read_model(path)
        if static:
            model.reshape({name: list(value.shape) for name, value in feed.items()})
        cfg = {"INFERENCE_PRECISION_HINT": "f32"} if precision == "f32" else {}
        compiled = core.compile_model(model, "GPU", {**cfg, **(config or {})})
        request = compiled.create_infer_request()
        inputs = device_feed(feed, device, torch.float32)
        return lambda: request.infer(inputs).to_tuple()[0]
    return setup


def eager_setup(module: Any, feed: dict[str, Any], dtype: Any, device: Any) -> Setup:
    def setup() -> Callable[[], Any]:
        m = copy.deepcopy(module).to(device, dtype)
        inputs = device_feed(feed, device, dtype)

        def call() -> Any:
            with torch.inference_mode():
                return m(*inputs.values())
        return call
    return setup


def graph_setup(module: Any, feed: dict[str, Any], dtype: Any, device: Any) -> Setup:
    """The module captured as one CUDA graph (after warm-up on a side stream), replayed with inputs copied in."""
    def setup() -> Callable[[], Any]:
        m = copy.deepcopy(module).to(device, dtype)
        inputs = device_feed(feed, device, dtype)
        static = {k: v.clone() for k, v in inputs.items()}
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.inference_mode():
            with torch.cuda.stream(side):
                for _ in range(3):
                    m(*static.values())
            torch.cuda.current_stream(device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = m(*static.values())

        def call() -> Any:
            for k, v in inputs.items():
                static[k].copy_(v)
            graph.replay()
            return out
        return call
    return setup


def compile_setup(module: Any, feed: dict[str, Any], dtype: Any, device: Any, batch: int) -> Setup:
    def setup() -> Callable[[], Any]:
        m = copy.deepcopy(module).to(device, dtype)
        inputs = device_feed(feed, device, dtype)
        compiled = torch.compile(m, mode="reduce-overhead" if batch == 1 else None)

        def call() -> Any:
            with torch.inference_mode():
                return compiled(*inputs.values())
        for _ in range(2):  # reduce-overhead records its CUDA graph on the calls after the first
            call()
        return call
    return setup


def measure(row: Row, setup: Setup, clock: Clock, calls: int, warmup: int, reference: np.ndarray | None) -> Row:
    """Fill ``row`` from one contender; an error becomes its note."""
    base = clock.memory_start()
    try:
        start = time.perf_counter()
        call = setup()
        out = call()
        clock.sync()
        row.compile_s = time.perf_counter() - start
        got = as_numpy(out)
        for _ in range(warmup):
            call()
        times = clock.time(call, calls)
    except Exception as exc:  # noqa: BLE001 - one contender's failure is a finding, not the end of the run
        row.note = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
        return row
    finally:
        row.memory_mb = clock.memory_peak(base)
        gc.collect()
    row.latency_ms = statistics.median(times)
    row.throughput = row.batch * 1e3 / row.latency_ms
    if reference is not None:
        row.max_diff = float(np.max(np.abs(got - reference))) if got.shape == reference.shape else float("inf")
        row.rel_diff = row.max_diff / max(float(np.max(np.abs(reference))), 1e-30)
        if got.shape != reference.shape:
            row.note = f"output shape {got.shape}, expected {reference.shape}"
    return row


# ---------------------------------------------------------------------------------------------- runs

def run_model(model_def: ModelDef, args: argparse.Namespace, device: Any, clock: Clock) -> list[Row]:
    rows: list[Row] = []
    try:
        module = model_def.make()
    except RuntimeError as exc:
        print(f"{model_def.name}: skipped: {exc}", flush=True)
        return rows
    t0 = time.perf_counter()
    path = export(model_def, module, args.folder)
    print(f"{model_def.name}: exported {os.path.basename(path)} in {time.perf_counter() - t0:.1f} s", flush=True)
    for batch in args.batches:
        feed = model_def.inputs(batch, model_def.seq)
        try:  # the accuracy reference: eager PyTorch in f32 (TF32 off)
            reference: np.ndarray | None = as_numpy(eager_setup(module, feed, torch.float32, device)()())
        except Exception as exc:  # noqa: BLE001
            print(f"  {model_def.name} b{batch}: no f32 reference: {type(exc).__name__}: {exc}", flush=True)
            reference = None
        for precision in args.precisions:
            dtype = torch.float16 if precision == "fp16" else torch.float32
            contenders: list[tuple[str, Setup]] = [
                ("vinerun", vinerun_setup(path, feed, precision, device)),
                ("eager", eager_setup(module, feed, dtype, device)),
            ]
            if clock.cuda:
                contenders.append(("cuda graph", graph_setup(module, feed, dtype, device)))
            if clock.cuda and not args.no_compile:
                contenders.append(("torch.compile", compile_setup(module, feed, dtype, device, batch)))
            group = []
            for name, setup in contenders:
                row = measure(Row(model_def.name, batch, precision, name), setup, clock, args.calls, args.warmup,
                              reference)
                group.append(row)
                print(fmt_row(row), flush=True)
            mine = group[0].latency_ms
            for row in group[1:]:
                if mine and row.latency_ms:
                    group[0].ratios[row.contender] = mine / row.latency_ms
            if group[0].ratios:
                print("    vinerun / " + ", ".join(f"{k} {v:.2f}x" for k, v in group[0].ratios.items()), flush=True)
            rows += group
    if model_def.seq:
        rows += dynamic_rows(model_def, module, path, args, device, clock)
    if args.async_requests:
        rows += async_row(model_def, path, args, device, clock)
    del module
    gc.collect()
    return rows


def dynamic_rows(model_def: ModelDef, module: Any, path: str, args: argparse.Namespace, device: Any,
                 clock: Clock) -> list[Row]:
    """One compiled model with a dynamic sequence, calls alternating two lengths (batch 1)."""
    precision = args.precisions[0]
    dtype = torch.float16 if precision == "fp16" else torch.float32
    lengths = (model_def.seq, model_def.seq // 2)
    feeds = [model_def.inputs(1, s) for s in lengths]
    rows = []
    base = clock.memory_start()
    try:
        start = time.perf_counter()
        core = ov.Core()
        compiled = core.compile_model(core.read_model(path), "GPU",
                                      {"INFERENCE_PRECISION_HINT": "f32"} if precision == "f32" else {})
        request = compiled.create_infer_request()
        inputs = [device_feed(f, device, torch.float32) for f in feeds]
        request.infer(inputs[0])
        compile_s = time.perf_counter() - start
        for _ in range(max(args.warmup, 6)):  # each length seen often enough to get its specialized plan
            for x in inputs:
                request.infer(x)
        time.sleep(1.0 if clock.cuda else 0.2)  # specialized plans compile on a background thread
        for _ in range(args.warmup):
            for x in inputs:
                request.infer(x)
        eager = [eager_setup(module, f, dtype, device)() for f in feeds]
        for i, s in enumerate(lengths):
            times, eager_times = [], []
            for _ in range(args.calls):  # vinerun's call of this length, between calls of the other
                times += clock.time(lambda i=i: request.infer(inputs[i]), 1)
                request.infer(inputs[1 - i])
                eager_times += clock.time(eager[i], 1)
            ref = as_numpy(eager_setup(module, feeds[i], torch.float32, device)()())
            got = as_numpy(request.infer(inputs[i]).to_tuple()[0])
            row = Row(model_def.name, 1, precision, f"vinerun dynamic seq {s}", statistics.median(times),
                      1e3 / statistics.median(times), compile_s, None, float(np.max(np.abs(got - ref))))
            row.ratios["eager"] = row.latency_ms / statistics.median(eager_times)
            rows.append(row)
            print(fmt_row(row) + f"   (eager same length {statistics.median(eager_times):.3f} ms: "
                  f"{row.ratios['eager']:.2f}x)", flush=True)
    except Exception as exc:  # noqa: BLE001
        rows.append(Row(model_def.name, 1, precision, "vinerun dynamic", note=f"{type(exc).__name__}: {exc}"))
        print(fmt_row(rows[-1]), flush=True)
    if rows:
        rows[0].memory_mb = clock.memory_peak(base)
    return rows


def async_row(model_def: ModelDef, path: str, args: argparse.Namespace, device: Any, clock: Clock) -> list[Row]:
    """THROUGHPUT hint, ``AsyncInferQueue`` with the hint's number of requests, batch-1 requests (host inputs)."""
    precision = args.precisions[0]
    row = Row(model_def.name, 1, precision, "vinerun THROUGHPUT async")
    try:
        start = time.perf_counter()
        core = ov.Core()
        model = core.read_model(path)
        feed = {k: v.numpy() for k, v in model_def.inputs(1, model_def.seq).items()}
        model.reshape({k: list(v.shape) for k, v in feed.items()})
        cfg = {"PERFORMANCE_HINT": "THROUGHPUT", **({"INFERENCE_PRECISION_HINT": "f32"} if precision == "f32" else {})}
        compiled = core.compile_model(model, "GPU", cfg)
        jobs = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        queue = ov.AsyncInferQueue(compiled, jobs)
        queue.start_async(feed)
        queue.wait_all()
        row.compile_s = time.perf_counter() - start
        for _ in range(jobs * 2):
            queue.start_async(feed)
        queue.wait_all()
        # a whole number of rounds of the queue: with automatic batching a last, partial batch would wait for
        # AUTO_BATCH_TIMEOUT (1 s) and the figure would measure the timeout
        n = -(-args.async_requests // jobs) * jobs
        t0 = time.perf_counter()
        for _ in range(n):
            queue.start_async(feed)
        queue.wait_all()
        row.throughput = n / (time.perf_counter() - t0)
        batch = compiled.get_property("AUTO_BATCH_SIZE") if "AUTO_BATCH_SIZE" in \
            compiled.get_property("SUPPORTED_PROPERTIES") else 1
        row.note = f"{jobs} requests, automatic batch {batch}, {compiled.get_property('NUM_STREAMS')} streams, " \
                   "host inputs"
    except Exception as exc:  # noqa: BLE001
        row.note = f"{type(exc).__name__}: {exc}"
    print(fmt_row(row), flush=True)
    return [row]


def fmt_row(r: Row) -> str:
    def f(v: float | None, spec: str) -> str:
        return format(v, spec) if v is not None else "-"
    return (f"  {r.model:11s} b{r.batch:<3d} {r.precision:4s} {r.contender:26s} {f(r.latency_ms, '9.3f')} ms "
            f"{f(r.throughput, '10.1f')}/s  compile {f(r.compile_s, '6.2f')} s  mem {f(r.memory_mb, '8.1f')} MB  "
            f"max|diff| {f(r.max_diff, '.2e')} (rel {f(r.rel_diff, '.1e')})  {r.note}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--models", nargs="+", metavar="NAME",
                   help=f"models (default: {' '.join(MODELS)}; with --stand-in: {' '.join(STAND_IN_MODELS)})")
    p.add_argument("--batches", nargs="+", type=int, help="batch sizes (default 1 64; with --stand-in 1 4)")
    p.add_argument("--precisions", nargs="+", choices=("fp16", "f32"), help="default fp16 f32 (--quick: fp16)")
    p.add_argument("--calls", type=int, help="timed calls per contender (default 50; --quick 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before them (default 5)")
    p.add_argument("--async-requests", type=int, help="requests of the AsyncInferQueue row (0: no row; "
                   "default 400; --quick 200)")
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out (its compiles are slow)")
    p.add_argument("--quick", action="store_true", help="fp16 only, 20 calls: a run of a few minutes")
    p.add_argument("--stand-in", action="store_true",
                   help="no GPU needed: tiny models on vinerun's CPU stand-in and PyTorch's CPU device")
    p.add_argument("--json", metavar="FILE", help="write every row as JSON")
    p.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "vinerun_gpu_bench"),
                   help="where the ONNX exports are written (and reused)")
    args = p.parse_args(argv)
    table = STAND_IN_MODELS if args.stand_in else MODELS
    args.models = args.models or list(table)
    unknown = [m for m in args.models if m not in table]
    if unknown:
        p.error(f"unknown model(s) {unknown}; choose from {list(table)}")
    args.batches = args.batches or ([1, 4] if args.stand_in else [1, 64])
    args.precisions = args.precisions or (["fp16"] if args.quick else ["fp16", "f32"])
    args.calls = args.calls or (20 if args.quick or args.stand_in else 50)
    if args.async_requests is None:
        args.async_requests = 40 if args.stand_in else 200 if args.quick else 400
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if torch is None:
        print("no GPU (PyTorch is not installed)")
        return 0
    cuda = torch.cuda.is_available()
    if not cuda and not args.stand_in:
        print("no GPU (PyTorch sees no CUDA device); --stand-in runs tiny models on the CPU to check the script")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 means f32, for every contender
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    table = STAND_IN_MODELS if args.stand_in else MODELS
    device = torch.device("cpu") if args.stand_in else torch.device("cuda", 0)
    clock = Clock(device)
    name = "stand-in (PyTorch CPU device)" if args.stand_in else torch.cuda.get_device_name(0)
    print(f"device: {name}; torch {torch.__version__}; models {args.models}; batches {args.batches}; "
          f"precisions {args.precisions}; {args.calls} calls after {args.warmup} warm-up", flush=True)
    start = time.perf_counter()
    rows: list[Row] = []
    with gpu_backend.stand_in() if args.stand_in else contextlib.nullcontext():
        for model in args.models:
            rows += run_model(table[model], args, device, clock)
    print(f"total {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"device": name, "torch": torch.__version__, "rows": [asdict(r) for r in rows]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
