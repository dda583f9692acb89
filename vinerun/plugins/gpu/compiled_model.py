"""GPU compiled model and its infer request.

Compile: constant folding (load-time execution: whatever is constant is computed once, here), the pattern
rewrites and fusions, f16 lowering, then a :class:`~.plan.GpuPlan` whose constants are uploaded once. Requests
run on the compiled model's streams (one device queue each, with its own requests); on CUDA each request replays
its plan as a CUDA graph per input shape.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Iterator
from typing import Any

import torch

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.executors import StreamsExecutor
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.property_table import PropertyValues
from vinerun.plugin_api.specialize import Shapes, SpecializedPlans
from vinerun.plugins.gpu import device_info, triton_codegen, tuning
from vinerun.plugins.gpu.backend import GpuDevice
from vinerun.plugins.gpu.config import COMPILED_TABLE, TUNABLE, Throttle, effective_precision
from vinerun.plugins.gpu.custom_layers import load_custom_layers
from vinerun.plugins.gpu.kernels import TORCH_DTYPES, to_host
from vinerun.plugins.gpu.passes import gpu_passes
from vinerun.plugins.gpu.plan import GpuPlan, GraphRunner
from vinerun.plugins.gpu.precision import quantized_model_precision
from vinerun.plugins.gpu.remote import GpuContext, GpuRemoteTensor
from vinerun.properties import hint
from vinerun.transformations import common_cleanup

#: streams under the THROUGHPUT hint (or NUM_STREAMS=AUTO): two device queues keep the GPU busy while the host
#: prepares the next request, as OpenVINO's GPU plugin picks 2 for most models
THROUGHPUT_STREAMS = 2


def compile_plan(model: Model, precision: Any, device: GpuDevice, custom: dict[str, Any] | None = None,
                 unroll: bool = True) -> GpuPlan:
    """The GPU's graph passes on ``model`` (in place), then its plan (``custom``: ``CONFIG_FILE`` kernels; the
    passes leave ops of those types alone; ``unroll``: ``GPU_ENABLE_LOOP_UNROLLING``)."""
    gpu_passes(model, precision, device.torch_device, frozenset(custom or ()), unroll)
    return GpuPlan(model, device, custom)


def _ops(model: Model) -> dict[str, str]:
    return {n.friendly_name: n.type_name for n in model.get_ordered_ops()
            if not isinstance(n, (Parameter, Constant, Result))}


class GPUCompiledModel(ICompiledModel):
    """A model compiled into a :class:`GpuPlan` on one GPU."""

    #: requests take device tensors (torch / DLPack / RemoteTensor) as inputs without a host copy
    takes_device_tensors = True

    def __init__(self, model: Model, config: PropertyValues, device: GpuDevice, device_name: str):
        super().__init__(model.clone(), device_name)
        self.values, self.gpu = config, device
        self.config: dict[str, Any] = {k: config.get(k) for k in COMPILED_TABLE.props if k in config.values}
        self.loaded_from_cache = False
        source_ops = _ops(self.model)
        common_cleanup()(self.model)  # load-time execution: constant subgraphs (PriorBox, shape arithmetic) fold
        #: nodes computed at compile time (profiling lists them as load-time, OPTIMIZED_OUT)
        self.load_time = sorted(set(source_ops.items()) - set(_ops(self.model).items()))
        self._unfused = self.model  # what export_graph returns: IR-writable, no internal ops
        self.model = self.model.clone()
        self.precision = quantized_model_precision(self.model, effective_precision(config),
                                                   bool(config.get("ENABLE_FP16_FOR_QUANTIZED_MODELS")))
        triton_codegen.set_cache_dir(config.get("CACHE_DIR"))
        triton_codegen.set_dump_dir(config.get("GPU_DUMP_GRAPHS_PATH"))
        self.custom = load_custom_layers(config.get("CONFIG_FILE"))
        self._unroll = bool(config.get("GPU_ENABLE_LOOP_UNROLLING"))
        # TUNING_MODE / TUNING_FILE: kernels made now keep the store and tune their launches at their first run
        with tuning.tuning(config.get("TUNING_MODE"), config.get("TUNING_FILE")):
            self.plan = compile_plan(self.model, self.precision, device, self.custom, self._unroll)
        self.specialized: SpecializedPlans | None = None
        if any(p.get_output_partial_shape(0).is_dynamic for p in self._unfused.get_parameters()):
            self.specialized = SpecializedPlans(self._specialize)
        self.num_streams = self._resolve_streams()
        self._streams = [_make_stream(device, config.get("MODEL_PRIORITY")) for _ in range(self.num_streams)]
        self._next_stream = itertools.count()
        self._dump(config.get("GPU_DUMP_GRAPHS_PATH"))
        self._warm_up()
        self.properties = PropertyValues(COMPILED_TABLE, {p.name: config.get(p.name) for p in TUNABLE}, computed={
            "NETWORK_NAME": lambda: self.model.friendly_name,
            "NUM_STREAMS": lambda: self.num_streams,
            "OPTIMAL_NUMBER_OF_INFER_REQUESTS": self.optimal_requests,
            "INFERENCE_PRECISION_HINT": lambda: self.precision,
            "EXECUTION_DEVICES": lambda: [device_name],
            "LOADED_FROM_CACHE": lambda: self.loaded_from_cache,
            "DEVICE_ID": lambda: str(device.index),
            "GPU_MEMORY_STATISTICS": lambda: device_info.memory_statistics(device),
        })

    def _dump(self, folder: str) -> None:
        """``GPU_DUMP_GRAPHS_PATH``: the executed graph as ``<model>_gpu_plan.dot`` (kernel sources go beside it)."""
        if folder:
            os.makedirs(folder, exist_ok=True)
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.model.friendly_name) or "model"
            with open(os.path.join(folder, f"{name}_gpu_plan.dot"), "w", encoding="utf-8") as f:
                f.write(self.plan.to_dot())

    def _warm_up(self) -> None:
        """On CUDA, run a static plan once at compile: kernels are compiled (Triton) and chosen (cuDNN) at load,
        as clDNN compiles its OpenCL kernels, so the first inference is not the slow one."""
        if self.gpu.kind != "cuda" or self.specialized is not None:
            return
        try:
            xs = [torch.zeros(p.get_output_partial_shape(0).to_shape(),
                              dtype=TORCH_DTYPES[p.get_output_element_type(0).get_type_name()],
                              device=self.gpu.torch_device) for p in self.model.get_parameters()]
            with torch.cuda.stream(self._streams[0]), cudnn_mode(self.precision):
                self.plan.run(xs)
            self._streams[0].synchronize()
        except Exception:  # noqa: BLE001 - a model that cannot run on zeros warms up on its first inference
            pass

    def _resolve_streams(self) -> int:
        n = int(self.values.get("NUM_STREAMS"))
        throughput = self.values.get("PERFORMANCE_HINT") == hint.PerformanceMode.THROUGHPUT
        if n < 0 or (throughput and not self.values.is_set("NUM_STREAMS")):
            return THROUGHPUT_STREAMS
        return max(n, 1)

    def optimal_requests(self) -> int:
        """LATENCY: 1; THROUGHPUT: two requests per stream (one running, one being filled), capped by
        ``PERFORMANCE_HINT_NUM_REQUESTS``."""
        if self.values.get("PERFORMANCE_HINT") != hint.PerformanceMode.THROUGHPUT:
            return self.num_streams
        cap = int(self.values.get("PERFORMANCE_HINT_NUM_REQUESTS"))
        n = 2 * self.num_streams
        return min(n, cap) if cap > 0 else n

    def _specialize(self, shapes: Shapes) -> GpuPlan:
        """The plan of this model with its inputs reshaped to ``shapes`` (static: captured as a CUDA graph)."""
        model = self._unfused.clone()
        model.reshape({i: list(shape) for i, shape in enumerate(shapes)})
        common_cleanup()(model)
        model.validate_nodes_and_infer_types()
        return compile_plan(model, self.precision, self.gpu, self.custom, self._unroll)

    def plan_for(self, inputs: list[Any]) -> GpuPlan:
        if self.specialized is None:
            return self.plan
        return self.specialized.get(inputs) or self.plan

    def next_stream(self) -> Any:
        return self._streams[next(self._next_stream) % len(self._streams)]

    def export_graph(self) -> Model:
        return self._unfused

    def get_context(self) -> GpuContext:
        return GpuContext(self.gpu, self.device_name)

    def create_sync_infer_request(self) -> GPUInferRequest:
        return GPUInferRequest(self)

    def get_property(self, key: str) -> Any:
        return self.properties.get(key)

    def make_task_executor(self) -> Any:
        """One worker thread per stream; with ``EXCLUSIVE_ASYNC_REQUESTS`` one worker for all compiled models."""
        if self.values.get("EXCLUSIVE_ASYNC_REQUESTS"):
            return _exclusive_executor()
        return StreamsExecutor(self.num_streams, name=f"GPU:{self.model.friendly_name}")


@contextlib.contextmanager
def cudnn_mode(precision: Any) -> Iterator[None]:
    """cuDNN as the plan wants it while it runs: autotuned algorithms (``benchmark``: the fastest for each shape,
    chosen once), and no TF32 under an f32 hint (PyTorch lets cuDNN use TF32 by default, ~1e-3 off in f32)."""
    cudnn = torch.backends.cudnn
    saved = cudnn.allow_tf32, cudnn.benchmark
    cudnn.allow_tf32, cudnn.benchmark = precision != Type.f32 and saved[0], True
    try:
        yield
    finally:
        cudnn.allow_tf32, cudnn.benchmark = saved


def _make_stream(device: GpuDevice, priority: Any) -> Any:
    """A device queue: a CUDA stream (priority HIGH is CUDA's higher priority), None on the stand-in."""
    if device.kind == "cuda":
        return torch.cuda.Stream(device.index, priority=-1 if priority == hint.Priority.HIGH else 0)
    if device.kind == "xpu":
        return torch.xpu.Stream(device.index)
    return None


_exclusive: list[Any] = []
_exclusive_lock = threading.Lock()


class _SharedExecutor:
    """The one worker every compiled model with ``EXCLUSIVE_ASYNC_REQUESTS`` submits to (no ``shutdown``: no
    compiled model owns it)."""

    def __init__(self) -> None:
        self._executor = StreamsExecutor(1, name="GPU:exclusive")

    def submit(self, task: Any) -> None:
        self._executor.submit(task)


def _exclusive_executor() -> _SharedExecutor:
    with _exclusive_lock:
        if not _exclusive:
            _exclusive.append(_SharedExecutor())
        return _exclusive[0]


def _stream_scope(device: GpuDevice, stream: Any) -> Any:
    if device.kind == "cuda":
        return torch.cuda.stream(stream)
    if device.kind == "xpu":
        return torch.xpu.stream(stream)
    return contextlib.nullcontext()


def _wait(device: GpuDevice, stream: Any, throttle: Throttle) -> None:
    """Wait for ``stream``'s work as ``GPU_QUEUE_THROTTLE`` says: HIGH spins on an event in Python (lowest
    latency, a busy core holding Python's lock between polls), MEDIUM waits in the driver with Python's lock
    released (CUDA's default: spin, then yield), so the other streams' and the batcher's threads run meanwhile;
    LOW blocks in the driver (no CPU used)."""
    if device.kind != "cuda":
        if device.kind == "xpu":
            stream.synchronize()
        return
    event = torch.cuda.Event(blocking=throttle == Throttle.LOW)
    event.record(stream)
    if throttle == Throttle.HIGH:
        while not event.query():
            pass
        return
    event.synchronize()  # releases the GIL while it waits


def _device_tensor(x: Any) -> torch.Tensor | None:
    """A device value a caller passed (torch tensor, RemoteTensor, any DLPack producer), as a torch tensor."""
    if isinstance(x, GpuRemoteTensor):
        return x.torch
    if isinstance(x, torch.Tensor):
        return x
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
        return torch.from_dlpack(x)
    return None


class GPUInferRequest(ISyncInferRequest):
    """Runs the plan on its stream (a CUDA graph replay where the plan allows); keeps the last profile.

    Host arrays in: host arrays out. Device tensors in (any input): outputs stay on the device and come back as
    :class:`GpuRemoteTensor` (the request's buffers, overwritten by its next inference, as OpenVINO's)."""

    def __init__(self, compiled: GPUCompiledModel):
        self.compiled = compiled
        self.stream = compiled.next_stream()
        self._graphs: dict[int, GraphRunner] = {}
        self._profile: list[ProfilingInfo] = []
        self._perf_count = bool(compiled.values.get("PERF_COUNT"))
        self._throttle = compiled.values.get("GPU_QUEUE_THROTTLE")

    def infer(self, inputs: list[Any]) -> list[Any]:
        device = self.compiled.gpu
        on_device = [_device_tensor(x) for x in inputs]
        device_io = any(t is not None for t in on_device)
        xs = [t if t is not None else x for t, x in zip(on_device, inputs, strict=True)]
        profile: list[ProfilingInfo] | None = [] if self._perf_count else None
        if device_io and device.kind == "cuda":
            self.stream.wait_stream(torch.cuda.current_stream(device.torch_device))  # inputs made on the caller's
        with _stream_scope(device, self.stream), cudnn_mode(self.compiled.precision):
            outs = self._run(xs, profile)
            if not device_io:  # copies to host memory queued on this stream, behind the work
                outs = [o.to("cpu", non_blocking=True) if isinstance(o, torch.Tensor) and o.device.type != "cpu"
                        else o for o in outs]
            _wait(device, self.stream, self._throttle)
        if profile is not None:
            profile.extend(ProfilingInfo(name, type_name, "load_time", "OPTIMIZED_OUT")
                           for name, type_name in self.compiled.load_time)
            self._profile = profile
        if device_io:
            return [GpuRemoteTensor(o, self.compiled.device_name) if isinstance(o, torch.Tensor) else o for o in outs]
        return [to_host(o) for o in outs]

    def host_inputs(self) -> list[Any] | None:
        """The pinned staging arrays of the static plan's captured graph (None before its first run, on the
        stand-in, or while profiling): BATCH writes each request's input row straight into them."""
        if self.compiled.specialized is not None or self._perf_count:
            return None
        runner = self._graphs.get(id(self.compiled.plan))
        return None if runner is None or runner.failed else runner.host_inputs()

    def _run(self, xs: list[Any], profile: list[ProfilingInfo] | None) -> list[Any]:
        """The plan for these inputs: replayed as a CUDA graph where it can be (not while profiling)."""
        plan = self.compiled.plan_for(xs)
        if profile is None and plan.capturable:
            runner = self._graphs.get(id(plan))
            if runner is None:
                runner = self._graphs[id(plan)] = GraphRunner(plan, self.stream)
            outs = None if runner.failed else runner.run(xs)
            if outs is not None:
                return outs
        return plan.run(xs, profile)

    def get_profiling_info(self) -> list[ProfilingInfo]:
        return list(self._profile)
