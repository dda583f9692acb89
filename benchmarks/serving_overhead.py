"""Server overhead: requests/s and latency through ``vinerun serve`` (REST, and gRPC when available)
against in-process ``AsyncInferQueue`` on the same model, same config, in the same run.

The contenders take turns (in-process, REST, gRPC, in-process, ...) for ``--seconds`` each; the report
gives each one's median throughput over the rounds, median/p90 latency, and the server/in-process ratio.
REST clients are tritonclient.http with binary tensors; gRPC clients tritonclient.grpc. Each uses
``--clients`` threads (default: 2 x nireq) so the server's queue never runs dry.

    python benchmarks/serving_overhead.py                      # cnn (small) and ResNet-50, 3 rounds
    python benchmarks/serving_overhead.py --models resnet50 --rounds 5 --seconds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import save_resnet50  # noqa: E402

import vinerun as ov  # noqa: E402
from tests.serving.serving_utils import ServeProcess  # noqa: E402
from vinerun import models as vmodels  # noqa: E402


def build_repo(root: Path, names: list[str]) -> dict[str, tuple[Path, str, list[int]]]:
    """``{name: (model file, input name, input shape)}`` under ``root/<name>/1/``."""
    out = {}
    for name in names:
        path = root / name / "1" / "model.onnx"
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "resnet50":
            save_resnet50(str(path))
        else:
            onnx.save(vmodels.build_onnx("cnn"), path)
        graph_input = onnx.load(str(path), load_external_data=False).graph.input[0]
        shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
        out[name] = (path, graph_input.name, shape)
    return out


def run_inprocess(compiled: ov.CompiledModel, nireq: int, inputs: dict, seconds: float) -> tuple[float, list[float]]:
    queue = ov.AsyncInferQueue(compiled, nireq)
    latencies: list[float] = []
    started: dict[int, float] = {}

    def done(request, job):
        latencies.append(time.perf_counter() - started.pop(job))

    queue.set_callback(done)
    t0 = time.perf_counter()
    job = 0
    while time.perf_counter() - t0 < seconds:
        started[job] = time.perf_counter()
        queue.start_async(inputs, userdata=job)
        job += 1
    queue.wait_all()
    return len(latencies) / (time.perf_counter() - t0), latencies


def run_clients(make_call, clients: int, seconds: float) -> tuple[float, list[float]]:
    latencies: list[float] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    t0 = time.perf_counter()

    def worker():
        call = make_call()
        while time.perf_counter() - t0 < seconds:
            s = time.perf_counter()
            try:
                call()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return
            with lock:
                latencies.append(time.perf_counter() - s)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"client failed: {errors[0]}")
    return len(latencies) / (time.perf_counter() - t0), latencies


def rest_call(url: str, model: str, name: str, x: np.ndarray):
    def make():
        import tritonclient.http as h

        client = h.InferenceServerClient(url)
        inp = h.InferInput(name, list(x.shape), "FP32")
        inp.set_data_from_numpy(x, binary_data=True)
        return lambda: client.infer(model, [inp])
    return make


def grpc_call(address: str, model: str, name: str, x: np.ndarray):
    def make():
        import tritonclient.grpc as g

        client = g.InferenceServerClient(address)
        inp = g.InferInput(name, list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        return lambda: client.infer(model, [inp])
    return make


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="cnn,resnet50")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--hint", default="THROUGHPUT", choices=["THROUGHPUT", "LATENCY"],
                   help="PERFORMANCE_HINT for both the server and in-process (default: THROUGHPUT)")
    p.add_argument("--nireq", type=int, default=0, help="0 = OPTIMAL_NUMBER_OF_INFER_REQUESTS of the THROUGHPUT hint")
    p.add_argument("--clients", type=int, default=0, help="client threads per transport (0 = 2 x nireq)")
    p.add_argument("--no-grpc", action="store_true")
    p.add_argument("--json", default=None, help="also write the results here")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    plugin_config = {"PERFORMANCE_HINT": args.hint}
    tmp = Path(tempfile.mkdtemp(prefix="vinerun-serving-bench-"))
    repo = build_repo(tmp, names)
    core = ov.Core()
    compiled = {n: core.compile_model(str(repo[n][0]), "CPU", plugin_config) for n in names}
    nireq = args.nireq or int(next(iter(compiled.values())).get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    clients = args.clients or 2 * nireq
    config = {"model_config_list": [{"config": {"name": n, "base_path": str(tmp / n), "nireq": nireq,
                                                "plugin_config": plugin_config}} for n in names]}
    (tmp / "config.json").write_text(json.dumps(config))
    try:
        import vinerun.serving.grpc.server  # noqa: F401
        grpc = not args.no_grpc
    except ImportError:
        grpc = False
    server = ServeProcess(["--config_path", str(tmp / "config.json"), "--file_system_poll_wait_seconds", "0"],
                          grpc=grpc, log_path=tmp / "serve.log").wait_ready(timeout=300)
    results = {}
    try:
        for n in names:
            path, name, shape = repo[n]
            x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
            contenders = {"in-process": lambda n=n, x=x, name=name: run_inprocess(compiled[n], nireq, {name: x},
                                                                                  args.seconds),
                          "REST": lambda n=n, x=x, name=name: run_clients(
                              rest_call(server.url.removeprefix("http://"), n, name, x), clients, args.seconds)}
            if grpc:
                contenders["gRPC"] = lambda n=n, x=x, name=name: run_clients(
                    grpc_call(server.grpc_address, n, name, x), clients, args.seconds)
            run_inprocess(compiled[n], nireq, {name: x}, 0.5)
            run_clients(rest_call(server.url.removeprefix("http://"), n, name, x), clients, 0.5)
            fps: dict[str, list[float]] = {k: [] for k in contenders}
            lat: dict[str, list[float]] = {k: [] for k in contenders}
            for _ in range(args.rounds):
                for k, c in contenders.items():
                    f, ls = c()
                    fps[k].append(f)
                    lat[k] += ls
            base = statistics.median(fps["in-process"])
            results[n] = {}
            print(f"\n{n} ({args.hint}, nireq {nireq}, {clients} client threads, {args.rounds} rounds x "
                  f"{args.seconds:g} s, loadavg {os.getloadavg()[0]:.2f})")
            print(f"  {'contender':<11} {'req/s':>8} {'ratio':>6} {'median ms':>10} {'p90 ms':>8}   rounds")
            for k in contenders:
                med = statistics.median(fps[k])
                ms = np.array(lat[k]) * 1e3
                results[n][k] = {"rps": med, "ratio": med / base, "median_ms": float(np.median(ms)),
                                 "p90_ms": float(np.percentile(ms, 90)), "rounds": fps[k]}
                print(f"  {k:<11} {med:8.1f} {med / base:6.2f} {np.median(ms):10.1f} {np.percentile(ms, 90):8.1f}   "
                      + " ".join(f"{v:.1f}" for v in fps[k]))
    finally:
        server.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
