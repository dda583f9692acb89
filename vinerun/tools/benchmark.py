"""``vinerun benchmark``: OpenVINO's benchmark_app for vinerun — same flags, steps and report.

    vinerun benchmark -m model.onnx -d CPU -hint throughput -t 15
    vinerun benchmark -m model.xml -api sync -niter 100 -pc -report_folder out -json_stats

The run goes through benchmark_app's eleven steps (read, reshape, compile, query, fill random
inputs, measure, report) and ends with Count, Duration, Latency (Median, Average, Min, Max) and
Throughput. See docs/benchmark.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from vinerun import __version__
from vinerun.errors import VinerunError
from vinerun.ir.layout import Layout
from vinerun.ir.model import Model
from vinerun.ir.tensor import Tensor
from vinerun.runtime.async_queue import AsyncInferQueue
from vinerun.runtime.compiled_model import CompiledModel
from vinerun.runtime.core import Core
from vinerun.tools import benchmark_config as cfg
from vinerun.tools import benchmark_report as rep
from vinerun.tools.benchmark_inputs import InputInfo, batch_size, fill_inputs, input_infos, port_name
from vinerun.tools.benchmark_loop import Limits, LoopResult, run_async, run_sync

DEFAULT_DURATION_S = 60.0


def info(msg: str = "") -> None:
    print(f"[ INFO ] {msg}", flush=True)


def warning(msg: str) -> None:
    print(f"[ WARNING ] {msg}", flush=True)


def step(n: int, title: str) -> None:
    print(f"[Step {n}/11] {title}", flush=True)


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "y"):
        return True
    if text.lower() in ("0", "false", "no", "n"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean, got '{text}'")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors (bad value, unknown flag) are one line, with no usage block."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        ns, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns, []


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``benchmark`` (benchmark_app's single-dash flags) on the ``vinerun`` command."""
    parser_class = sub._parser_class
    sub._parser_class = _Parser
    try:
        p = sub.add_parser("benchmark", help="measure latency and throughput (like OpenVINO's benchmark_app)",
                           description="Measure a model's inference latency and throughput, with benchmark_app's "
                                       "flags and report.", allow_abbrev=False)
    finally:
        sub._parser_class = parser_class
    p.add_argument("-m", required=True, metavar="PATH", help="model file (.onnx or .xml)")
    p.add_argument("-d", default="CPU", metavar="DEVICE", help="target device (default CPU)")
    p.add_argument("-hint", choices=list(cfg.HINTS), default=None,
                   help="performance hint; default LATENCY for -api sync, THROUGHPUT for -api async")
    p.add_argument("-api", choices=["sync", "async"], default=None,
                   help="sync or async requests; default sync for -hint latency, else async")
    p.add_argument("-niter", type=int, default=None, help="number of iterations (0: compile and exit)")
    p.add_argument("-t", type=float, default=None, metavar="SECONDS",
                   help=f"time limit in seconds (default {DEFAULT_DURATION_S:g} when -niter is not given)")
    p.add_argument("-nireq", type=int, default=0, help="infer requests in flight (async; default: the device's "
                                                       "OPTIMAL_NUMBER_OF_INFER_REQUESTS)")
    p.add_argument("-nstreams", default=None, help="streams: N, AUTO or DEVICE:N,... (use with -hint none)")
    p.add_argument("-nthreads", type=int, default=None, help="inference threads (use with -hint none)")
    p.add_argument("-b", type=int, default=None, metavar="BATCH", help="batch size (the N dimension)")
    p.add_argument("-shape", default=None, help='model input shapes, e.g. "x[1,3,224,224]" or "[?,3,224,224]"')
    p.add_argument("-data_shape", default=None,
                   help='data shapes for dynamic inputs, e.g. "x[1,3,224,224][1,3,448,448]"')
    p.add_argument("-layout", default=None, help='input layouts, e.g. "x[NCHW]" or "[NCHW]"')
    p.add_argument("-infer_precision", default=None, help="INFERENCE_PRECISION_HINT, e.g. f32, bf16 or CPU:bf16")
    p.add_argument("-pc", type=_bool, nargs="?", const=True, default=False, help="print per-layer counters")
    p.add_argument("-cdir", default=None, metavar="DIR", help="model cache directory (CACHE_DIR)")
    p.add_argument("-report_type", choices=list(rep.REPORT_TYPES), default=None,
                   help="statistics report content (written to -report_folder)")
    p.add_argument("-report_folder", default=None, metavar="DIR", help="folder for the report files (created)")
    p.add_argument("-json_stats", type=_bool, nargs="?", const=True, default=False,
                   help="write the reports as JSON instead of CSV")
    p.add_argument("-latency_percentile", type=int, default=50, help="latency percentile to report (1-100)")
    p.add_argument("-progress", type=_bool, nargs="?", const=True, default=None,
                   help="show a progress bar on stderr (default: only when stderr is a terminal)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The ``benchmark`` command; user errors raise :class:`VinerunError` (one line from the CLI)."""
    try:
        return _run(args)
    except OSError as e:
        raise VinerunError(str(e)) from e
    except KeyboardInterrupt:
        print("vinerun benchmark: interrupted", file=sys.stderr)
        return 130


def _validate(args: argparse.Namespace) -> None:
    if not 1 <= args.latency_percentile <= 100:
        raise cfg.BenchmarkArgumentError(f"-latency_percentile must be in [1, 100], got {args.latency_percentile}")
    for flag, value, low in (("-niter", args.niter, 0), ("-nireq", args.nireq, 0), ("-b", args.b, 1),
                             ("-nthreads", args.nthreads, 0)):
        if value is not None and value < low:
            raise cfg.BenchmarkArgumentError(f"{flag} must be >= {low}, got {value}")
    if args.t is not None and args.t <= 0:
        raise cfg.BenchmarkArgumentError(f"-t must be a positive number of seconds, got {args.t:g}")


def _run(args: argparse.Namespace) -> int:
    step(1, "Parsing and validating input arguments")
    info("Parsing input parameters")
    _validate(args)
    hint, api = cfg.resolve_hint_and_api(args.hint, args.api, bool(args.nstreams or args.nthreads))
    report_type = args.report_type or ("no_counters" if args.report_folder or args.json_stats else None)
    perf_count = bool(args.pc) or report_type in ("average_counters", "detailed_counters")
    device = args.d

    step(2, "Loading vinerun Runtime")
    core = Core()
    info("vinerun:")
    info(f"Build ................................. {__version__}")
    info()
    info("Device info:")
    for name, version in core.get_versions(device).items():
        info(name)
        info(f"Build ................................. {getattr(version, 'build_number', version)}")
    info()

    step(3, "Setting device configuration")
    supported = core.get_property(device, "SUPPORTED_PROPERTIES")
    if args.hint is None and hint is not None:
        warning(f"Performance hint was not explicitly specified in command line. Device({device}) performance "
                f"hint will be set to {hint}.")
    config = cfg.device_config(device, supported, hint, cfg.value_for_device(args.nstreams, device, "-nstreams"),
                               args.nthreads, cfg.value_for_device(args.infer_precision, device, "-infer_precision"),
                               perf_count)
    if args.cdir:
        core.set_property({"CACHE_DIR": args.cdir})

    if Path(args.m).suffix.lower() == ".blob":  # a compiled blob (vinerun compile / export_model): import it
        compiled, read_ms, compile_ms = _import_blob(core, args, device, config)
    else:
        step(4, "Reading model files")
        info("Loading model files")
        t0 = time.perf_counter()
        model = core.read_model(args.m)
        read_ms = (time.perf_counter() - t0) * 1e3
        info(f"Read model took {read_ms:.2f} ms")
        info("Original model I/O parameters:")
        _print_io(model.inputs, model.outputs)

        step(5, "Resizing model to match image sizes and given batch")
        _reshape(model, args)

        step(6, "Configuring input of the model")
        _print_io(model.inputs, model.outputs)

        step(7, "Loading the model to the device")
        t0 = time.perf_counter()
        compiled = core.compile_model(model, device, config)
        compile_ms = (time.perf_counter() - t0) * 1e3
        info(f"Compile model took {compile_ms:.2f} ms")

    step(8, "Querying optimal runtime parameters")
    _print_compiled_properties(compiled)
    if args.niter == 0:
        info("-niter 0: the model is compiled; no inference is run")
        return 0
    nireq = 1 if api == "sync" else (args.nireq or _property(compiled, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", 1))

    step(9, "Creating infer requests and preparing input tensors")
    data_shapes = _data_shapes(compiled, args.data_shape)
    infos = input_infos(compiled.inputs, data_shapes)
    for i in infos:
        info(f"Fill input '{i.name}' with random values ")
    sets = [[s[i.name] for i in infos] for s in fill_inputs(infos)]
    requests, queue = _create_requests(compiled, api, nireq, sets)

    niter = _align_niter(args.niter, nireq, len(sets), api)
    duration = args.t if args.t is not None else (None if args.niter else DEFAULT_DURATION_S)
    limits = Limits(niter, duration)
    step(10, f"Measuring performance ({_start_text(api, nireq, limits)})")
    inference_only = len(sets) == 1
    if inference_only:
        info("Benchmarking in inference only mode (inputs filling are not included in measurement loop).")
    else:
        info("Benchmarking in full mode (inputs filling are included in measurement loop).")
    if api == "sync":
        requests[0].infer()
    else:  # on the stream's thread, as the timed runs: a sync call would give this thread an OpenMP team too
        queue.start_async()  # the queue's first idle request: requests[0]
        queue.wait_all()
    first_ms = requests[0].latency
    info(f"First inference took {first_ms:.2f} ms")
    bar = limits.progress_bar(sys.stderr, args.progress)
    feed = None if inference_only else sets
    result = run_sync(requests[0], feed, limits, bar) if api == "sync" else run_async(queue, feed, limits, bar)

    step(11, "Dumping statistics report")
    stats = rep.Statistics(result.latencies_ms, result.iterations, result.duration_s, batch_size(infos),
                           args.latency_percentile)
    per_request = [rep.counters(r.get_profiling_info()) for r in requests] if perf_count else []
    if args.pc:
        for i, rows in enumerate(per_request):
            info(f"Performance counts for {i}-th infer request")
            for line in rep.counter_lines(rows):
                print(line)
    # AUTO/MULTI: {device: inferences it ran} (first inference included)
    per_device = _property(compiled, "EXECUTED_REQUESTS_PER_DEVICE", None)
    if report_type:
        sections = _report_sections(args, device, api, nireq, inference_only, stats, read_ms, compile_ms,
                                    first_ms, result, duration)
        if per_device:
            sections["execution_results"]["executed requests per device"] = rep.per_device_text(per_device)
        for path in rep.write_reports(args.report_folder or ".", bool(args.json_stats), report_type, sections,
                                      per_request):
            info(f"Statistics report is stored to {path}")
    for line in rep.summary_lines(stats, _property(compiled, "EXECUTION_DEVICES", [device])):
        info(line)
    if per_device:
        info(f"Executed requests per device: {rep.per_device_text(per_device)}")
    return 0


# --- steps' helpers ---------------------------------------------------------------------------
def _import_blob(core: Core, args: argparse.Namespace, device: str, config: dict[str, Any]) -> tuple[Any, float, float]:
    """Steps 4-7 for a blob: nothing to read or reshape; import it (benchmark_app does the same)."""
    for n, title in ((4, "Reading model files"), (5, "Resizing model to match image sizes and given batch"),
                     (6, "Configuring input of the model")):
        step(n, title)
        info("Skipping the step for compiled network")
    if args.shape or args.layout or args.b:
        raise cfg.BenchmarkArgumentError("-shape, -layout and -b do not apply to a compiled blob "
                                         "(give them to `vinerun compile` instead)")
    step(7, "Loading the model to the device")
    try:
        blob = Path(args.m).read_bytes()
    except OSError as e:
        raise cfg.BenchmarkArgumentError(f"-m: cannot read {args.m}: {e.strerror}") from None
    t0 = time.perf_counter()
    compiled = core.import_model(blob, device, config)
    import_ms = (time.perf_counter() - t0) * 1e3
    info(f"Import model took {import_ms:.2f} ms")
    return compiled, 0.0, import_ms


def _print_io(inputs: list[Any], outputs: list[Any]) -> None:
    for title, ports in (("Model inputs:", inputs), ("Model outputs:", outputs)):
        info(title)
        for port in ports:
            layout = port.node.get_layout() if hasattr(port.node, "get_layout") else Layout()
            shown = "[...]" if layout.empty else layout.to_string()
            info(f"    {port_name(port)} (node: {port.node.friendly_name}) : {port.get_element_type().get_type_name()}"
                 f" / {shown} / {port.get_partial_shape()}")


def _reshape(model: Model, args: argparse.Namespace) -> None:
    """-layout, then -shape, then -b (the N dimension of each input, dim 0 without a layout)."""
    inputs = model.inputs
    if args.layout:
        for i, values in cfg.assign_to_inputs(cfg.parse_input_map(args.layout, "-layout"), inputs, "-layout").items():
            try:
                inputs[i].node.set_layout(Layout(values[0]))
            except ValueError as e:
                raise cfg.BenchmarkArgumentError(f"-layout: {e}") from None
    shapes: dict[int, Any] = {}
    if args.shape:
        for i, values in cfg.assign_to_inputs(cfg.parse_input_map(args.shape), inputs, "-shape").items():
            if len(values) != 1:
                raise cfg.BenchmarkArgumentError(f"-shape: give one shape for input '{port_name(inputs[i])}' "
                                                 "(several data shapes go to -data_shape)")
            shapes[i] = cfg.parse_partial_shape(values[0], "-shape", port_name(inputs[i]))
    if args.b:
        for i, port in enumerate(inputs):
            shape = shapes.get(i, port.get_partial_shape())
            if shape.rank.is_dynamic or len(shape) == 0:
                continue
            layout = port.node.get_layout()
            axis = layout.get_index_by_name("N") if layout.has_name("N") else 0
            if layout.empty:
                warning(f"Input '{port_name(port)}' has no layout: -b sets its dimension 0 (use -layout to choose)")
            shape = type(shape)(shape)
            shape[axis] = args.b
            shapes[i] = shape
    if shapes:
        model.reshape(shapes)
    static = [InputInfo(port_name(p), p.get_element_type(), p.get_partial_shape(), p.node.get_layout(),
                        [[int(d) for d in p.get_partial_shape().to_shape()]]) for p in model.inputs
              if p.get_partial_shape().is_static]
    info(f"Model batch size: {args.b or batch_size(static)}")


def _data_shapes(compiled: CompiledModel, text: str | None) -> dict[int, list[list[int]]]:
    if not text:
        return {}
    inputs = compiled.inputs
    mapping = cfg.assign_to_inputs(cfg.parse_input_map(text, "-data_shape"), inputs, "-data_shape")
    return {i: [cfg.parse_static_shape(v, "-data_shape", port_name(inputs[i])) for v in values]
            for i, values in mapping.items()}


def _property(compiled: CompiledModel, key: str, default: Any) -> Any:
    try:
        return compiled.get_property(key)
    except VinerunError:
        return default


def _print_compiled_properties(compiled: CompiledModel) -> None:
    info("Model:")
    for key in _property(compiled, "SUPPORTED_PROPERTIES", {}):
        if key == "SUPPORTED_PROPERTIES":
            continue
        value = _property(compiled, key, None)
        if isinstance(value, bool):
            value = "YES" if value else "NO"
        info(f"  {key}: {value}")


def _create_requests(compiled: CompiledModel, api: str, nireq: int, sets: list[list[Any]]) -> tuple[list[Any], Any]:
    """Sync: one request. Async: an AsyncInferQueue of ``nireq`` requests. Inputs are set once."""
    if api == "sync":
        requests = [compiled.create_infer_request()]
        queue = None
    else:
        queue = AsyncInferQueue(compiled, nireq)
        requests = [queue[i] for i in range(len(queue))]
    for request in requests:
        for i, array in enumerate(sets[0]):
            request.set_input_tensor(i, Tensor(array))
    return requests, queue


def _align_niter(niter: int | None, nireq: int, n_sets: int, api: str) -> int | None:
    if api != "async" or not niter:
        return niter
    step_ = max(nireq, n_sets)
    aligned = (niter + step_ - 1) // step_ * step_
    if aligned != niter:
        warning(f"Number of iterations was aligned by request number from {niter} to {aligned} "
                f"using number of requests {step_}")
    return aligned


def _start_text(api: str, nireq: int, limits: Limits) -> str:
    parts = []
    if limits.niter:
        parts.append(f"{limits.niter} iterations")
    if limits.duration_s:
        parts.append(f"{limits.duration_s * 1000:.0f} ms duration")
    how = "synchronously" if api == "sync" else f"asynchronously, {nireq} inference requests"
    return f"Start inference {how}, limits: {', '.join(parts)}"


def _report_sections(args: argparse.Namespace, device: str, api: str, nireq: int, inference_only: bool,
                     stats: rep.Statistics, read_ms: float, compile_ms: float, first_ms: float, result: LoopResult,
                     duration_s: float | None) -> dict[str, dict[str, Any]]:
    cmd = {f"-{k}": str(v) for k, v in vars(args).items() if k not in ("func", "command") and v not in (None, False)}
    latency_key = "latency (ms)" if stats.latency_percentile == 50 else \
        f"latency ({stats.latency_percentile} percentile) (ms)"
    return {
        "cmd_options": cmd,
        "configuration_setup": {
            "topology": args.m, "target device": device, "API": api,
            "inference_only": inference_only,
            "precision": args.infer_precision or "UNSPECIFIED", "batch size": str(stats.batch),
            "number of iterations": str(result.iterations), "number of parallel infer requests": str(nireq),
            "duration (ms)": f"{(duration_s or 0) * 1000:.0f}",
        },
        "execution_results": {
            "read model time (ms)": f"{read_ms:.2f}", "compile model time (ms)": f"{compile_ms:.2f}",
            "first inference time (ms)": f"{first_ms:.2f}",
            "total execution time (ms)": f"{result.duration_s * 1000:.2f}",
            "total number of iterations": str(result.iterations), latency_key: f"{stats.median_ms:.2f}",
            "avg latency": f"{stats.avg_ms:.2f}", "min latency": f"{stats.min_ms:.2f}",
            "max latency": f"{stats.max_ms:.2f}", "throughput": f"{stats.fps:.2f}",
        },
    }
