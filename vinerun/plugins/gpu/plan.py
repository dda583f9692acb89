"""The GPU's executable plan: nodes in order, each bound to a device kernel and to value slots.

Constants are uploaded to the device once, when the plan is built. A run is a loop over pre-resolved steps
(read input slots, call the kernel, write output slots, drop values after their last use). On CUDA a plan whose
steps all run on the device is captured once per input shape as a CUDA graph (:class:`GraphRunner`) and replayed:
one launch per inference instead of one per kernel.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
import torch

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.plugin_api.infer_request import ProfilingInfo
from vinerun.plugin_api.kernel_registry import node_error
from vinerun.plugins.gpu.backend import GpuDevice
from vinerun.plugins.gpu.kernels import GpuKernel, select_kernel, to_device

#: input shapes a request keeps a captured graph for (each holds its own activation memory)
GRAPHS_PER_REQUEST = 4
#: one CUDA graph capture at a time in the process (see :meth:`GraphRunner._capture`)
_CAPTURE_LOCK = threading.Lock()


@dataclass
class Step:
    node: Node
    kernel: GpuKernel
    ins: list[int]
    outs: list[int]
    free: list[int] = field(default_factory=list)  # slots whose last reader is this step


class GpuPlan:
    """A compiled graph on one device: ``run(inputs) -> outputs`` with per-node kernels."""

    def __init__(self, model: Model, device: GpuDevice, custom: dict[str, Any] | None = None):
        """``custom``: the user's kernels by op type (``CONFIG_FILE``), taken before the built-in ones."""
        self.model, self.device = model, device
        custom = custom or {}
        torch_device = device.torch_device
        slot_of: dict[tuple[int, int], int] = {}

        def slot(node: Node, i: int) -> int:
            return slot_of.setdefault((id(node), i), len(slot_of))

        self.input_slots = [slot(p, 0) for p in model.get_parameters()]
        self.constants: dict[int, Any] = {}
        self.steps: list[Step] = []
        for node in model.get_ordered_ops():
            if isinstance(node, (Parameter, Result)):
                continue
            if isinstance(node, Constant):
                self.constants[slot(node, 0)] = to_device(node.get_value(), torch_device)  # uploaded once
                continue
            ins = [-1 if o is None else slot(o.node, o.index) for o in node.input_values()]
            outs = [slot(node, i) for i in range(node.get_output_size())]
            kernel = _custom_kernel(node, custom[node.type_name]) if node.type_name in custom else select_kernel(
                node, torch_device)
            self.steps.append(Step(node, kernel, ins, outs))
        self.output_slots = [slot(r.input_value(0).node, r.input_value(0).index) for r in model.get_results()]
        self.n_slots = len(slot_of) + 1  # slot -1 is never written: a missing optional input reads None
        self._plan_liveness()
        self._template: list[Any] = [None] * self.n_slots
        for s, v in self.constants.items():
            self._template[s] = v
        self._copy_outputs = self._aliasing_outputs()
        #: every step runs on the device, so a run can be captured as a CUDA graph
        self.capturable = device.is_cuda and not any(st.kernel.host for st in self.steps)

    def _plan_liveness(self) -> None:
        keep = set(self.output_slots) | set(self.constants) | set(self.input_slots)
        last_use: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for s in step.ins:
                if s >= 0:
                    last_use[s] = i
        for s, i in last_use.items():
            if s not in keep:
                self.steps[i].free.append(s)

    def _aliasing_outputs(self) -> list[int]:
        """Positions of the outputs a view kernel may have made of a model input or a constant: copied, so that
        the caller never gets memory it passed in, or a constant's."""
        aliased = set(self.input_slots) | set(self.constants)
        for step in self.steps:
            if step.kernel.view and step.ins and step.ins[0] in aliased:
                aliased.update(step.outs)
        return [i for i, s in enumerate(self.output_slots) if s in aliased]

    def to_dot(self) -> str:
        """The executed graph as GraphViz: one box per step (name, type, exec type), host steps shaded."""
        lines = ["digraph gpu_plan {", "  node [shape=box style=filled fontname=monospace];"]
        producer = {s: f"s{i}" for i, st in enumerate(self.steps) for s in st.outs}
        for i, st in enumerate(self.steps):
            label = f"{st.node.friendly_name}\\n{st.node.type_name}\\n{st.kernel.exec_type}".replace('"', "'")
            color = "#fdbf6f" if st.kernel.host else "#b2df8a"
            lines.append(f'  s{i} [label="{label}" fillcolor="{color}"];')
            lines += [f"  {producer[s]} -> s{i};" for s in st.ins if s in producer]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def run(self, inputs: list[Any], profile: list[ProfilingInfo] | None = None) -> list[Any]:
        """Run once on the current stream; ``inputs`` are device tensors (host arrays are uploaded)."""
        values = self._template.copy()
        dev = self.device.torch_device
        for k, s in enumerate(self.input_slots):
            if k < len(inputs):
                x = inputs[k]
                values[s] = x if isinstance(x, torch.Tensor) and x.device == dev else to_device(x, dev)
        if profile is None:
            self._run_fast(values)
        else:
            self._run_profiled(values, profile)
        outs = [values[s] for s in self.output_slots]
        for i in self._copy_outputs:
            if isinstance(outs[i], torch.Tensor):
                outs[i] = outs[i].clone()
        return outs

    def _run_fast(self, values: list[Any]) -> None:
        step = None
        try:
            for step in self.steps:
                res = step.kernel.fn([values[s] for s in step.ins])
                for s, v in zip(step.outs, res, strict=False):
                    values[s] = v
                for s in step.free:
                    values[s] = None
        except Exception as e:  # noqa: BLE001 - name the node whose kernel failed
            raise node_error(step.node, e, "GPU") from e  # type: ignore[union-attr]

    def _run_profiled(self, values: list[Any], profile: list[ProfilingInfo]) -> None:
        """Each step timed: device time from CUDA events around it, host time from the process clock."""
        cuda = self.device.is_cuda
        records = []
        for step in self.steps:
            args = [values[s] for s in step.ins]
            c0, t0 = time.process_time(), time.perf_counter()
            start = end = None
            if cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
            try:
                res = step.kernel.fn(args)
            except Exception as e:  # noqa: BLE001
                raise node_error(step.node, e, "GPU") from e
            if cuda:
                end.record()  # type: ignore[union-attr]
            records.append((step, start, end, time.perf_counter() - t0, time.process_time() - c0))
            for s, v in zip(step.outs, res, strict=False):
                values[s] = v
            for s in step.free:
                values[s] = None
        self.device.synchronize()
        for step, start, end, wall, cpu in records:
            real = start.elapsed_time(end) / 1e3 if start is not None else wall
            node, kernel = step.node, step.kernel
            status = "OPTIMIZED_OUT" if kernel.view else "EXECUTED"
            profile.append(ProfilingInfo(node.friendly_name, node.type_name, kernel.exec_type, status,
                                         timedelta(seconds=real), timedelta(seconds=cpu)))
            for name, type_name in getattr(node, "fused_names", ()):
                profile.append(ProfilingInfo(name, type_name, "undef", "OPTIMIZED_OUT"))


class GraphRunner:
    """A plan's runs captured as CUDA graphs, one per input shape (at most :data:`GRAPHS_PER_REQUEST`), each
    with its own input and output buffers: a call copies its inputs in and replays the graph.

    The outputs are the graph's buffers: the next call overwrites them (as an OpenVINO request's output tensors).
    Host inputs go through pinned staging arrays; a caller that writes its inputs straight into them
    (:meth:`host_inputs`, e.g. BATCH gathering a batch) saves that copy.
    """

    def __init__(self, plan: GpuPlan, stream: torch.cuda.Stream):
        self.plan, self.stream = plan, stream
        #: input shapes and types -> (graph, its input buffers, its outputs, pinned staging tensors, their arrays)
        self._graphs: OrderedDict[tuple, tuple[torch.cuda.CUDAGraph, list[Any], list[Any], list[Any], list[Any]]] = \
            OrderedDict()
        self.failed = False

    def host_inputs(self) -> list[np.ndarray] | None:
        """The pinned staging arrays of the one graph captured so far (None if none, several, or a bf16 input):
        arrays written in place and passed to :meth:`run` as its inputs are uploaded without another copy."""
        if len(self._graphs) != 1:
            return None
        arrays = next(iter(self._graphs.values()))[4]
        return None if any(a is None for a in arrays) else list(arrays)

    def run(self, inputs: list[Any]) -> list[Any] | None:
        """The outputs, or None when these inputs cannot be replayed (the caller runs the plan).

        Host arrays go through pinned staging arrays (one memcpy, then an asynchronous upload on the stream)."""
        if not all(isinstance(x, (torch.Tensor, np.ndarray)) for x in inputs):
            return None  # ONNX sequences, absent optionals: the plan runs them as they are
        key = tuple((tuple(x.shape), str(x.dtype)) for x in inputs)
        entry = self._graphs.get(key)
        if entry is None:
            dev = self.plan.device.torch_device
            xs = [x if isinstance(x, torch.Tensor) and x.device == dev else to_device(x, dev) for x in inputs]
            if not all(isinstance(x, torch.Tensor) for x in xs):
                return None
            entry = self._capture(xs)
            if entry is None:
                return None
            self._graphs[key] = entry
            if len(self._graphs) > GRAPHS_PER_REQUEST:
                self._graphs.popitem(last=False)
        else:
            self._graphs.move_to_end(key)
        graph, static_in, static_out, staging, arrays = entry
        for buf, stage, array, x in zip(static_in, staging, arrays, inputs, strict=True):
            if isinstance(x, torch.Tensor):
                buf.copy_(x, non_blocking=True)
            elif stage is not None:
                if x is not array:  # else the caller wrote it in place (host_inputs)
                    array[...] = x  # the previous upload from it finished: the request waited for its stream
                buf.copy_(stage, non_blocking=True)
            else:
                buf.copy_(to_device(x, buf.device), non_blocking=True)
        graph.replay()
        return list(static_out)

    def _capture(self, xs: list[torch.Tensor]) -> tuple | None:
        """Warm up and capture one run. Captures are serialized process-wide and capture in CUDA's thread-local
        mode: in the default global mode, another request's thread that queries an event, synchronizes or
        allocates pinned memory while this one captures makes both fail ("operation not permitted when stream
        is capturing"), and two captures at once would share PyTorch's capture state. The capture runs on
        PyTorch's own capture stream, not the request's: requests of one compiled model share their streams,
        and another request's work or event on a stream being captured would join (and break) the capture.
        Nothing between the graph's begin and end allocates pinned memory or synchronizes: the staging arrays
        come after it. Replays run on the request's stream."""
        static_in = [x.clone() for x in xs]
        try:
            with _CAPTURE_LOCK:
                self.plan.run(static_in)  # warm-up: lazy initializations (cuBLAS handles, cuDNN plans) happen here
                self.stream.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                    static_out = self.plan.run(static_in)
        except Exception:  # noqa: BLE001 - a kernel that cannot be captured: this plan runs eagerly from now on
            self.failed = True
            return None
        staging = [_pinned_like(x) for x in static_in]
        return graph, static_in, static_out, staging, [None if t is None else t.numpy() for t in staging]


def _pinned_like(x: torch.Tensor) -> torch.Tensor | None:
    """A pinned host tensor of ``x``'s shape and type (None for bf16, which NumPy lacks: uploaded as it comes)."""
    return torch.empty(x.shape, dtype=x.dtype, pin_memory=True) if x.dtype != torch.bfloat16 else None


def _custom_kernel(node: Node, entry: Any) -> GpuKernel:
    """A ``CONFIG_FILE`` kernel: ``entry(inputs, attributes)``."""
    attrs = node.get_attributes()
    return GpuKernel(lambda inputs: list(entry(inputs, attrs)), "custom")
