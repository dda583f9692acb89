"""The executable plan: nodes in order, each bound to a kernel and to value slots.

Running a plan is a loop over pre-resolved steps: read input slots, call the kernel, write output
slots, and drop values after their last use (a liveness plan, so memory does not pile up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.interpreter import body_runner
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.plugin_api.infer_request import ProfilingInfo
from vinerun.plugin_api.kernel_registry import node_error
from vinerun.plugins.cpu.kernels import Kernel, profiled_exec_type, select_kernel
from vinerun.plugins.cpu.native_segment import Segment, SegmentError
from vinerun.plugins.cpu.native_segment import enabled as native_enabled
from vinerun.plugins.cpu.segment_planner import plan_segments
from vinerun.plugins.cpu.shape_memo import ShapeGroup, memoize_shape_steps


def rewrite_patterns(model: Model) -> None:
    """Patterns rewritten into the ops the CPU runs best, in place, before the fusions: Converts and arithmetic
    that do nothing out, a Slice of everything and a Squeeze undoing an Unsqueeze, a one-hot MatMul into a Gather, a
    Reshape-Transpose-Reshape channel shuffle into ShuffleChannels, a channel Split into Slices, a constant Pad into
    the convolution or pooling after it, constant-bound Minimum / Maximum into Clamp, written-out hard-swish into
    HSwish, constant scales and shifts (BatchNorm too) folded together and into the convolution before them, a 2-D
    convolution over a width of 1 into a 1-D one, a spatial ReduceMean into a global AvgPool, ``x * sigmoid(x)``
    into Swish, a written-out mean-variance normalization into MVN, a written-out LSTM cell or a one-step
    LSTMSequence into LSTMCell, ``x[mask]`` as PyTorch exports it into a MaskedGather, a detection head's unrolled
    per-class score selection into one ClassTopK, a MatMul of flattened rows reshaped back into the MatMul of the
    N-D input."""
    from vinerun.plugins.cpu.class_topk import ClassTopKFusion
    from vinerun.plugins.cpu.masked_gather import MaskedGatherFusion
    from vinerun.transformations.channel_split import ChannelSplitToSlices
    from vinerun.transformations.clamp_fusion import MinMaxToClamp
    from vinerun.transformations.conv_squeeze import ConvWidthOneTo1D
    from vinerun.transformations.dead_code import DeadCodeElimination
    from vinerun.transformations.flattened_matmul import FlattenedMatMulUnflattening
    from vinerun.transformations.hswish_fusion import HSwishFusion
    from vinerun.transformations.identity_elimination import (
        IdentityArithmeticElimination,
        IdentityConvertElimination,
        IdentityReshapeElimination,
        IdentityShapeElimination,
    )
    from vinerun.transformations.linear_folding import LinearFolding
    from vinerun.transformations.lstm_cell_fusion import LSTMCellFusion
    from vinerun.transformations.mvn_fusion import MVNFusion
    from vinerun.transformations.one_hot_matmul import OneHotMatMulToGather
    from vinerun.transformations.pad_fusion import PadFusion
    from vinerun.transformations.reduce_to_pool import ReduceMeanToPool
    from vinerun.transformations.sequence_to_cell import LSTMSequenceToCell
    from vinerun.transformations.shared_ops import SharedOpOptimization
    from vinerun.transformations.shuffle_channels_fusion import ShuffleChannelsFusion
    from vinerun.transformations.swish_fusion import SwishFusion

    IdentityConvertElimination()(model)
    IdentityShapeElimination()(model)
    IdentityReshapeElimination()(model)  # exporters' same-shape Reshape after attention hid its head merge
    IdentityArithmeticElimination()(model)
    FlattenedMatMulUnflattening()(model)
    OneHotMatMulToGather()(model)
    MaskedGatherFusion()(model)
    DeadCodeElimination()(model)  # the NonZeros the MaskedGathers left: ClassTopKFusion counts the mask's readers
    ClassTopKFusion()(model)
    SharedOpOptimization()(model)  # after the per-class fusion, which matches each class's own copies
    ShuffleChannelsFusion()(model)
    ChannelSplitToSlices()(model)
    PadFusion()(model)
    MinMaxToClamp()(model)  # before HSwishFusion: relu6(x + 3) written as Minimum(Maximum(x + 3, 0), 6)
    HSwishFusion()(model)
    LinearFolding()(model)
    ConvWidthOneTo1D()(model)
    IdentityShapeElimination()(model)  # the Unsqueeze ConvWidthOneTo1D leaves before a converter's Squeeze
    ReduceMeanToPool()(model)
    SwishFusion()(model)
    MVNFusion()(model)  # a written-out LayerNorm: the LayerNorm fusion takes the MVN later
    LSTMCellFusion()(model)
    LSTMSequenceToCell()(model)


def compile_passes(model: Model) -> None:
    """The graph passes of an If branch body, in place: cleanup (folding, dead code), the pattern rewrites, then
    the convolution, GELU and MatMul fusions (the compiled model runs these and more on its own graph)."""
    from vinerun.plugins.cpu.fused_ops import conv_fusion, matmul_fusion
    from vinerun.plugins.cpu.scale_shift_fusion import ScaleShiftFusion
    from vinerun.transformations import common_cleanup
    from vinerun.transformations.gelu_fusion import GeluFusion

    common_cleanup()(model)
    rewrite_patterns(model)
    GeluFusion()(model)
    conv_fusion()(model)
    ScaleShiftFusion()(model)
    matmul_fusion()(model)


#: exec types of kernels whose outputs are fresh arrays and that keep no views of their inputs
FRESH_KERNELS = ("onednn_conv2d", "winograd_conv2d", "onednn_maxpool", "onednn_avgpool", "onednn_matmul",
                 "gemv_matmul", "onednn_reorder", "blocked_attention")


@dataclass
class Step:
    node: Node
    kernel: Kernel
    ins: list[int]
    outs: list[int]
    free: list[int] = field(default_factory=list)  # slots whose last reader is this step


class Plan:
    """A compiled graph: ``run(inputs) -> outputs`` with per-node kernels."""

    def __init__(self, model: Model):
        self.model = model
        slot_of: dict[tuple[int, int], int] = {}
        self.constants: dict[int, Any] = {}
        self.steps: list[Step] = []
        n_slots = 0

        def slot(node: Node, i: int) -> int:
            nonlocal n_slots
            key = (id(node), i)
            if key not in slot_of:
                slot_of[key] = n_slots
                n_slots += 1
            return slot_of[key]

        params = model.get_parameters()
        self.input_slots = [slot(p, 0) for p in params]
        for node in model.get_ordered_ops():
            if isinstance(node, Parameter):
                continue
            if isinstance(node, Constant):
                self.constants[slot(node, 0)] = node.get_value()
                continue
            if isinstance(node, Result):
                continue
            ins = [-1 if o is None else slot(o.node, o.index) for o in node.input_values()]
            outs = [slot(node, i) for i in range(node.get_output_size())]
            self.steps.append(Step(node, select_kernel(node), ins, outs))
        self.output_slots = [slot(r.input_value(0).node, r.input_value(0).index) for r in model.get_results()]
        read = {s for st in self.steps for s in st.ins} | set(self.output_slots)
        #: (position, slot) of the inputs something reads (an If branch's inlined weights are not)
        self.live_inputs = [(k, s) for k, s in enumerate(self.input_slots) if s in read]
        self.n_slots = n_slots + 1  # slot -1 is never written: a missing optional input (-1) reads None
        self._plan_liveness()
        self._copy_outputs = self._aliasing_outputs()
        self._plan_in_place()
        self._bodies: dict[int, Plan] = {}
        # a run's value slots start as a copy of this: the constants in place (a model may hold hundreds)
        self._constant_values: list[Any] = [None] * self.n_slots
        for s, v in self.constants.items():
            self._constant_values[s] = v
        # steps, or native segments of several (see native_segment)
        items: list[Step | Segment] = (plan_segments(self.steps, set(self.output_slots), self.constants)
                                       if native_enabled() else list(self.steps))
        # shape arithmetic left to the run (dynamic shapes) computed once per set of shapes (see shape_memo)
        self.items: list[Step | Segment | ShapeGroup] = memoize_shape_steps(items, self.constants,
                                                                            set(self.output_slots))
        # (kernel fn, input slots (-1: the last slot, always None), output slots, the single output or -1, frees)
        self._fast = [(item.kernel.fn if isinstance(item, Step) else item, tuple(item.ins), item.outs,
                       item.outs[0] if len(item.outs) == 1 else -1, tuple(item.free)) for item in self.items]

    def _plan_liveness(self) -> None:
        keep = set(self.output_slots) | set(self.constants)
        last_use: dict[int, int] = {}
        for i, step in enumerate(self.steps):
            for s in step.ins:
                if s >= 0:
                    last_use[s] = i
        for s in self.input_slots:
            keep.add(s)  # inputs belong to the caller
        for s, i in last_use.items():
            if s not in keep:
                self.steps[i].free.append(s)

    def _aliasing_outputs(self) -> list[int]:
        """Positions of the outputs that a view kernel may have made from a model input or a constant.

        View kernels (exec type ``view_*``, or ``may_view``) return NumPy views of their input 0; such an output is
        copied so that the caller never gets memory it passed in, or a constant's.
        """
        aliased = set(self.input_slots) | set(self.constants)
        viewed: set[int] = set()
        for step in self.steps:
            viewing = step.kernel.exec_type.startswith("view_") or getattr(step.kernel, "may_view", False)
            if viewing and step.ins and step.ins[0] in aliased:
                aliased.update(step.outs)
                viewed.update(step.outs)
        return [i for i, s in enumerate(self.output_slots) if s in viewed]

    def _plan_in_place(self) -> None:
        """Let a kernel overwrite an input (``kernel.inplace_input``) where nothing reads that value later.

        Conservative: the value must die at that step, be no model input, output or constant, be read once
        by the step, and be made and read only by kernels known to return fresh arrays and keep no views of
        their inputs (:data:`FRESH_KERNELS`), so that no other value can share its memory.
        """
        protected = set(self.input_slots) | set(self.constants) | set(self.output_slots)
        producer: dict[int, Step] = {}
        readers: dict[int, list[Step]] = {}
        for step in self.steps:
            for s in step.outs:
                producer[s] = step
            for s in step.ins:
                readers.setdefault(s, []).append(step)

        def fresh(step: Step | None) -> bool:
            return step is not None and step.kernel.exec_type.startswith(FRESH_KERNELS)

        for step in self.steps:
            index = getattr(step.kernel, "inplace_input", None)
            if index is None or index >= len(step.ins):
                continue
            slot = step.ins[index]
            if (slot >= 0 and slot in step.free and slot not in protected and step.ins.count(slot) == 1
                    and fresh(producer.get(slot)) and all(fresh(r) for r in readers.get(slot, []))):
                step.kernel.enable_inplace()  # type: ignore[attr-defined]

    def run(self, inputs: list[Any], profile: list[ProfilingInfo] | None = None) -> list[Any]:
        values = self._constant_values.copy()
        n = len(inputs)
        for k, s in self.live_inputs:
            if k < n:
                values[s] = inputs[k]
        with body_runner(self.run_body):
            if profile is None:
                self._run_fast(values)
            else:
                self._run_profiled(values, profile)
        outs = [values[s] for s in self.output_slots]
        for i in self._copy_outputs:
            outs[i] = np.array(outs[i], copy=True)
        return outs

    def _run_fast(self, values: list[Any]) -> None:
        """The loop without profiling: pre-bound calls, no per-step checks (zero-cost ``try`` in 3.11+)."""
        i = 0
        try:
            for i, (fn, ins, outs, out0, free) in enumerate(self._fast):  # noqa: B007 - read in except
                res = fn([values[s] for s in ins])
                if out0 >= 0:
                    values[out0] = res[0]
                else:
                    for s, v in zip(outs, res, strict=False):
                        values[s] = v
                for s in free:
                    values[s] = None
        except SegmentError as e:
            raise node_error(e.node, e.cause) from e.cause
        except Exception as e:  # noqa: BLE001 - name the node whose kernel failed
            raise node_error(self.items[i].node, e) from e

    def _run_profiled(self, values: list[Any], profile: list[ProfilingInfo]) -> None:
        """Each step timed as it runs in the fast path: a native segment's primitives in the segment (timed one
        by one), other steps through their kernels."""
        for item in self.items:
            timed = self._run_segment_timed(item, values) if isinstance(item, Segment) else None
            if timed is not None:
                for step, (wall, cpu) in zip(item.steps, timed, strict=True):
                    _record(profile, step, wall, cpu)
            elif isinstance(item, ShapeGroup):  # its steps read and write values of their own; it hands on some
                local = {s: values[s] for s in item.ins}
                read = local.get  # a value made outside the group: from the plan's slots
                for step in item.steps:
                    _run_step_profiled(step, lambda s, read=read: read(s, values[s]), local, profile)
                for s in item.outs:
                    values[s] = local[s]
                for s in item.free:
                    values[s] = None
            else:
                for step in item.steps if isinstance(item, Segment) else [item]:
                    _run_step_profiled(step, values.__getitem__, values, profile)
                    for s in step.free:
                        values[s] = None

    @staticmethod
    def _run_segment_timed(segment: Segment, values: list[Any]) -> list[tuple[float, float]] | None:
        """Run ``segment`` natively, its steps timed; None (nothing run) where its inputs are not as planned."""
        try:
            timed = segment.timed([None if s < 0 else values[s] for s in segment.ins])
        except SegmentError as e:
            raise node_error(e.node, e.cause) from e.cause
        if timed is None:
            return None
        outs, seconds = timed
        for s, v in zip(segment.outs, outs, strict=True):
            values[s] = v
        for s in segment.free:
            values[s] = None
        return seconds

    def run_body(self, body: Model, inputs: Any) -> list[Any]:
        plan = self._bodies.get(id(body))
        if plan is None:
            plan = self._bodies[id(body)] = Plan(body)
        return plan.run(list(inputs))


def _run_step_profiled(step: Step, read: Any, written: Any, profile: list[ProfilingInfo]) -> None:
    """Run ``step``'s kernel on the values ``read(slot)`` gives, timed; its outputs go into ``written``."""
    args = [None if s < 0 else read(s) for s in step.ins]
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        outs = step.kernel.fn(args)
    except Exception as e:  # noqa: BLE001 - name the node whose kernel failed
        raise node_error(step.node, e) from e
    _record(profile, step, time.perf_counter() - t0, time.process_time() - c0)
    for s, v in zip(step.outs, outs, strict=False):
        written[s] = v


def _record(profile: list[ProfilingInfo], step: Step, wall: float, cpu: float) -> None:
    """A step's profiling entry, then those of the ops its node fused (optimized out)."""
    node = step.node
    profile.append(ProfilingInfo(node.friendly_name, node.type_name, profiled_exec_type(step.kernel), "EXECUTED",
                                 timedelta(seconds=wall), timedelta(seconds=cpu)))
    for name, type_name in getattr(node, "fused_names", ()):
        profile.append(ProfilingInfo(name, type_name, "undef", "OPTIMIZED_OUT"))
