"""CPU compiled model and its infer request."""

from __future__ import annotations

import threading
import time
from typing import Any

from vinerun.ir.interpreter import state_scope
from vinerun.ir.model import Model
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.executors import StreamsExecutor
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.property_table import PropertyValues
from vinerun.plugin_api.request_loop import Hook
from vinerun.plugin_api.specialize import Shapes, SpecializedPlans
from vinerun.plugin_api.variable_state import VariableState, variable_states
from vinerun.plugins.cpu import cpu_topology, device_info, mem_pressure
from vinerun.plugins.cpu.compressed_weights import compress_weight_ops, dynamic_quantization_group
from vinerun.plugins.cpu.config import COMPILED_TABLE, PLUGIN_TABLE, effective_precision
from vinerun.plugins.cpu.depthwise_fusion import DepthwiseFusion
from vinerun.plugins.cpu.fused_ops import conv_fusion, matmul_fusion
from vinerun.plugins.cpu.plan import Plan, rewrite_patterns
from vinerun.plugins.cpu.precision import lower_precision
from vinerun.plugins.cpu.request_loop import NativeRequestLoop, request_loop
from vinerun.plugins.cpu.scale_shift_fusion import ScaleShiftFusion
from vinerun.plugins.cpu.streams import SharedStreams, StreamsConfig, resolve_streams, stream_executor
from vinerun.plugins.cpu.thread_governor import ThreadGovernor
from vinerun.plugins.cpu.winograd_selection import WinogradSelection
from vinerun.properties import hint
from vinerun.transformations import ConstantFolding, DeadCodeElimination, PassManager, common_cleanup
from vinerun.transformations.fused_transformer import attention_fusion, layer_norm_fusion
from vinerun.transformations.gelu_fusion import GeluFusion
from vinerun.transformations.low_precision import low_precision
from vinerun.transformations.nan_guard import NanGuardFusion


def compile_plan(model: Model, precision: Any, winograd: bool = True, dq_group: int = 0) -> Plan:
    """The CPU's graph passes on ``model`` (in place: pattern rewrites, fusions, precision lowering, the
    depthwise fusion and, with ``winograd``, the Winograd selection on the lowered graph), then its plan.

    ``model`` comes from ``common_cleanup(keep_decompression=True)``: the int8 passes take the weight
    dequantization subgraphs first, and what they leave is folded into f32 constants here."""
    GeluFusion()(model)  # first, so an int8 layer takes its GELU (a transformer's MLP) as a post-op too
    low_precision()(model)
    compress_weight_ops(model, dq_group)  # int8 / int4 weight-only MatMuls and Gathers keep their weights packed
    fold_decompression(model)
    rewrite_patterns(model)
    GeluFusion()(model)  # again (after the rewrites), before the convolution's fusion, which takes a Gelu
    conv_fusion()(model)
    attention_fusion()(model)
    NanGuardFusion()(model)  # after the attention fusion, which takes the guards of the attentions it fuses
    matmul_fusion()(model)
    layer_norm_fusion()(model)
    ScaleShiftFusion()(model)  # per-channel affines the convolutions and LayerNorms did not take
    lower_precision(model, precision)
    DepthwiseFusion()(model)
    if winograd:
        WinogradSelection()(model)
    return Plan(model)


def fold_decompression(model: Model) -> None:
    """Fold the weight dequantization subgraphs no int8 kernel took into f32 constants."""
    PassManager([ConstantFolding(), DeadCodeElimination()])(model)


def _winograd_allowed(values: PropertyValues) -> bool:
    """Winograd convolutions round differently from direct ones: not under ``EXECUTION_MODE_HINT=ACCURACY``."""
    return values.get("EXECUTION_MODE_HINT") != hint.ExecutionMode.ACCURACY


def _dynamic_inputs(model: Model) -> bool:
    return any(p.get_output_partial_shape(0).is_dynamic for p in model.get_parameters())


def plan_streams(model: Model, values: PropertyValues) -> StreamsConfig:
    """The stream layout for ``model`` (see :mod:`.streams`): the CPUs it may use (one per physical core under
    LATENCY unless ``ENABLE_HYPER_THREADING`` says otherwise, every logical CPU under the throughput hints), the
    threads per stream its memory pressure prefers, pinned where ``ENABLE_CPU_PINNING`` asks."""
    throughput = values.get("PERFORMANCE_HINT") != hint.PerformanceMode.LATENCY
    hyper_threading = bool(values.get("ENABLE_HYPER_THREADING")) if values.is_set("ENABLE_HYPER_THREADING") \
        else throughput
    cpus, smt_pairs = cpu_topology.usable_cpus(hyper_threading)
    prefer = 0
    if throughput:
        pressure = mem_pressure.mem_pressure(model, cpu_topology.l2_per_core())
        prefer = mem_pressure.preferred_threads(pressure, mem_pressure.isa_multiplier(device_info.cpu_flags()),
                                                smt_pairs)
    return resolve_streams(values, len(cpus), prefer, tuple(cpus), bool(values.get("ENABLE_CPU_PINNING")))


class CPUCompiledModel(ICompiledModel):
    """A model compiled into a :class:`Plan` of CPU kernels."""

    def __init__(self, model: Model, config: PropertyValues | dict[str, Any]):
        super().__init__(model.clone(), "CPU")
        if not isinstance(config, PropertyValues):
            values = PropertyValues(PLUGIN_TABLE)
            values.set(config)
            config = values
        self.values = config
        #: the read-write values it was compiled with (what export_model stores)
        self.config: dict[str, Any] = {k: config.get(k) for k in COMPILED_TABLE.props if k in config.values}
        self.streams: StreamsConfig = plan_streams(model, config)
        self.loaded_from_cache = False
        self.properties = PropertyValues(COMPILED_TABLE, {k: config.get(k) for k in COMPILED_TABLE.props
                                                          if k in PLUGIN_TABLE.props}, computed={
            "NETWORK_NAME": lambda: self.model.friendly_name,
            "NUM_STREAMS": lambda: self.streams.num_streams,
            "INFERENCE_NUM_THREADS": lambda: self.streams.num_threads,
            "OPTIMAL_NUMBER_OF_INFER_REQUESTS": lambda: self.streams.num_requests,
            "INFERENCE_PRECISION_HINT": lambda: effective_precision(config),
            "LOADED_FROM_CACHE": lambda: self.loaded_from_cache,
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": lambda: dynamic_quantization_group(config),
        })
        common_cleanup(keep_decompression=True)(self.model)  # constant folding + dead code, in place on the clone
        self._unfused = self.model  # what export_graph returns: IR-writable, no internal ops
        self.model = self.model.clone()
        start = time.perf_counter()
        self.plan = compile_plan(self.model, effective_precision(config), _winograd_allowed(config),
                                 dynamic_quantization_group(config))
        compile_seconds = time.perf_counter() - start
        #: plans for the input shapes calls bring, where the model's inputs are dynamic (see specialize)
        self.specialized: SpecializedPlans | None = None
        if _dynamic_inputs(self._unfused) and config.get("CPU_RUNTIME_CACHE_CAPACITY") > 0:
            self.specialized = SpecializedPlans(self._specialize, cost=compile_seconds)

    def _specialize(self, shapes: Shapes) -> Plan:
        """The plan of this model with its inputs reshaped to ``shapes``."""
        model = self._unfused.clone()
        model.reshape({i: list(shape) for i, shape in enumerate(shapes)})
        common_cleanup(keep_decompression=True)(model)  # the shape arithmetic is constant now: fold it, then infer
        # the static shapes
        model.validate_nodes_and_infer_types()
        return compile_plan(model, effective_precision(self.values), _winograd_allowed(self.values),
                            dynamic_quantization_group(self.values))

    def plan_for(self, inputs: list[Any]) -> Plan:
        """The plan a call with ``inputs`` runs: one specialized to their shapes once compiled, else the plan."""
        if self.specialized is None:
            return self.plan
        return self.specialized.get(inputs) or self.plan

    def export_graph(self) -> Model:
        """The graph before the CPU fusions (their ops are internal and not writable as IR)."""
        return self._unfused

    def create_sync_infer_request(self) -> CPUInferRequest:
        return CPUInferRequest(self)

    def get_property(self, key: str) -> Any:
        """Typed values (enums, bool, int, ``Type``), also where OpenVINO's compiled model returns strings."""
        return self.properties.get(key)

    def make_task_executor(self) -> StreamsExecutor | SharedStreams:
        """One worker thread per stream, each with its share of the cores (see :func:`stream_executor`)."""
        return stream_executor(f"CPU:{self.model.friendly_name}", self.streams)

    def request_loop(self, slots: int, hook: Hook) -> NativeRequestLoop | None:
        """Stream threads that run ``slots`` requests without the GIL, where the plan allows (see
        :mod:`.request_loop`)."""
        return request_loop(self, slots, hook)


class CPUInferRequest(ISyncInferRequest):
    """Runs the plan; keeps variable state and the last profile."""

    def __init__(self, compiled: CPUCompiledModel):
        self.compiled = compiled
        self.state: dict[str, Any] = {}
        self._profile: list[ProfilingInfo] = []
        # the stream's intra-op threads, on whatever thread runs the call (a sync infer on the main thread
        # runs there); one governor per plan: a dynamic plan's call times (Python-heavy) say nothing of the
        # plan specialized to a shape, and taking them for it kept BERT on 1 thread (14 ms, not 8.6) for seconds
        self._governors: dict[int, ThreadGovernor] = {}
        self._perf_count = bool(compiled.values.get("PERF_COUNT"))  # read-only once compiled

    def infer(self, inputs: list[Any]) -> list[Any]:
        executor = self.compiled.task_executor()
        if isinstance(executor, SharedStreams) and (
                executor.started() or threading.current_thread() is not threading.main_thread()):
            return executor.call(lambda: self._infer(inputs))  # one OpenMP team per stream (see SharedStreams.call)
        return self._infer(inputs)

    def _infer(self, inputs: list[Any]) -> list[Any]:
        profile: list[ProfilingInfo] | None = [] if self._perf_count else None
        plan = self.compiled.plan_for(inputs)
        governor = self._governors.get(id(plan))
        if governor is None:
            governor = self._governors[id(plan)] = ThreadGovernor(self.compiled.streams.threads_per_stream)
        start = time.perf_counter()
        with state_scope(self.state), governor.run():
            outs = plan.run(inputs, profile)
        if self.compiled.specialized is not None:
            self.compiled.specialized.ran(inputs, time.perf_counter() - start, plan is not self.compiled.plan)
        if profile is not None:
            self._profile = profile
        return outs

    def get_profiling_info(self) -> list[ProfilingInfo]:
        return list(self._profile)

    def query_state(self) -> list[VariableState]:
        return variable_states(self.compiled.model, self.state)
