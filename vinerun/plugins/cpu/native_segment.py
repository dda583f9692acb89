"""Native segments: runs of plan steps that are each one oneDNN primitive (or a view), executed by one call.

The plan's Python loop costs ~5 us a step (the argument list, a fresh output array and its address, the handle
and execute calls) and holds the GIL meanwhile: 0.3 ms of MobileNetV2's 4.7 ms, and a stream waits for it
while another runs its Python. A segment fixes its buffers once per thread instead: a value that lives only
inside the segment gets an offset in one arena (a liveness plan: memory is reused once its value is dead), the
primitives' memory objects point there for good, and a run only points the memory objects of the segment's
inputs and of the outputs it hands back, then executes the primitive list in C (``_steploop``) with the GIL
released. Without the compiled loop the same list runs through ctypes.

An input in another layout than planned (an NCHW image for a channels-last convolution, a caller's strided
array) is first copied into the planned one; an input of another dtype or shape runs the steps' Python kernels.
Profiling runs those always (per-node times). Measured: 0.53 us a step against 5.6 from Python, ~13 us fixed
per run (``benchmarks/step_overhead.py``).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from vinerun.plugins.cpu.kernels._dnnl import EXECUTE, LAYOUT_TYPES, DnnlError, data_address, library, optimized_impl
from vinerun.plugins.cpu.kernels._dnnl_ops import Reorder
from vinerun.plugins.cpu.kernels._native import NativeStep, ValueLayout, element_layout, layout_of_value, memory_order
from vinerun.plugins.cpu.kernels._torch import strided_view

try:
    from vinerun.plugins.cpu import _steploop  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler: the ctypes loop
    _steploop = None

ALIGN = 64  # bytes: oneDNN's preferred alignment


class StepEntry(ctypes.Structure):
    _fields_ = [("execute", ctypes.c_void_p), ("primitive", ctypes.c_void_p), ("nargs", ctypes.c_int64),
                ("args", ctypes.c_void_p)]


class HandleEntry(ctypes.Structure):
    _fields_ = [("memory", ctypes.c_void_p), ("buffer", ctypes.c_int64), ("offset", ctypes.c_int64)]


class SegmentError(Exception):
    """A step of a segment failed: ``node`` is the one to name."""

    def __init__(self, node: Any, cause: Exception):
        super().__init__(str(cause))
        self.node, self.cause = node, cause


def enabled() -> bool:
    """Whether plans use native segments (``VINERUN_CPU_NATIVE=0`` turns them off: every step from Python)."""
    return os.environ.get("VINERUN_CPU_NATIVE", "1") != "0" and library() is not None


@dataclass
class Group:
    """Values sharing one buffer (a value, its views, the sum written into it)."""

    root: int  # the slot whose layout allocates the buffer
    members: list[int] = field(default_factory=list)
    kind: str = "arena"  # "input" (made outside: a run points at it), "fresh" (allocated per run), "arena"
    offset: int = 0  # in the arena
    offsets: dict[int, int] = field(default_factory=dict)  # member -> its byte offset in the buffer (a slice)
    runtime: int = -1  # index in a run's address tuple ("input" and "fresh")


def permutation(layout: ValueLayout) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(dims in memory order, the transposition back) when ``layout`` is a transposed C-contiguous array."""
    order = memory_order(layout)
    if order is None:
        return None
    return tuple(layout[0][i] for i in order), tuple(int(i) for i in np.argsort(order))


class _CopyIn:
    """Copies arrays laid out as the first one seen into fresh arrays of the planned ``layout``: by a oneDNN
    reorder (an NCHW image to channels-last: 29 us where ATen's copy takes 91 and NumPy's 183, 1x3x224x224 f32,
    1 thread), else ATen's copy, else NumPy's."""

    def __init__(self, x: np.ndarray, layout: ValueLayout):
        self.dims, self.back = permutation(layout)  # type: ignore[misc] - segments take only such input layouts
        self.dtype = layout[2]
        self.reorder = input_reorder(x, layout)

    def __call__(self, a: np.ndarray) -> np.ndarray:
        y = np.empty(self.dims, self.dtype).transpose(self.back)
        if self.reorder is not None:
            self.reorder(torch.get_num_threads(), data_address(a), data_address(y))
            return y
        dst, src = strided_view(y), strided_view(a)
        if dst is not None and src is not None:
            dst.copy_(src)
        else:
            np.copyto(y, a)
        return y


def input_reorder(x: np.ndarray, layout: ValueLayout) -> Reorder | None:
    """A oneDNN reorder from ``x``'s layout to ``layout`` (same dtype), or None where oneDNN has no fast one."""
    dt = LAYOUT_TYPES.get(x.dtype.name)
    lib = library()
    if dt is None or lib is None or any(s <= 0 or s % x.itemsize for s in x.strides):
        return None
    reorder = Reorder(lib, element_layout(layout_of_value(x)), element_layout(layout))
    return reorder if optimized_impl(reorder, torch.get_num_threads()) is not None else None


def nbytes(layout: ValueLayout) -> int:
    return int(np.prod(layout[0], dtype=np.int64)) * layout[2].itemsize


class Segment:
    """Steps (plan ``Step`` objects, in order) and their native forms, run as one.

    ``ins``: the slots a run reads (values made outside, in the layouts planned); ``outs``: the slots it
    hands back (read after the segment, or model outputs), fresh arrays each run.
    """

    def __init__(self, steps: list[Any], natives: list[NativeStep], groups: dict[int, Group],
                 layouts: dict[int, ValueLayout], outs: list[int], constants: dict[int, Any], arena: int):
        self.steps, self.natives, self._groups = steps, natives, groups
        self.outs, self._constants, self._arena_bytes = outs, constants, arena
        unique = {id(g): g for g in groups.values()}.values()
        inputs = sorted((g for g in unique if g.kind == "input"), key=lambda g: g.runtime)
        self.ins = [g.root for g in inputs]
        self.in_layouts = [layouts[s] for s in self.ins]
        self._fresh = sorted((g for g in unique if g.kind == "fresh"), key=lambda g: g.runtime)
        self.fresh_shapes = [(permutation(layouts[g.root])[0], layouts[g.root][2]) for g in self._fresh]  # type: ignore[index]
        self._fresh_index = {id(g): i for i, g in enumerate(self._fresh)}
        # each output: its group's index among the fresh ones, and its shape, byte strides and offset there
        self.out_views = []
        for s in outs:
            shape, strides, dtype = layouts[s]
            self.out_views.append((self._fresh_index[id(groups[s])], shape, strides, groups[s].offsets.get(s, 0),
                                    dtype))
        self._local = threading.local()
        self._copiers: dict[tuple, _CopyIn] = {}  # (input index, its strides) -> its copy-in
        self.free = [slot for st in steps for slot in st.free]  # slots whose last reader is in the segment
        #: each entry of the native step table: its step's index in ``steps`` (views have no entry)
        self.table_steps = [i for i, native in enumerate(natives) if native.primitive is not None]

    @property
    def node(self) -> Any:
        """The first step's node (named when the segment fails outside a step)."""
        return self.steps[0].node

    def __call__(self, inputs: list[Any]) -> list[Any]:
        addresses = self._addresses(inputs)
        if addresses is None:
            return self._python(inputs)
        fresh = [np.empty(dims, dtype) for dims, dtype in self.fresh_shapes]
        failed = self.instance().run((*addresses, *fresh))
        if failed != -1:
            raise self.failure(failed)
        return self._outputs(fresh)

    def timed(self, inputs: list[Any]) -> tuple[list[Any], list[tuple[float, float]]] | None:
        """A native run that times each step (``PERF_COUNT``): the outputs and each step's (wall, CPU) seconds
        (0 for a view); None where the inputs are not the planned arrays (the caller runs the steps' kernels).
        The primitives run one ctypes call each (~1 us more a step than the C loop)."""
        addresses = self._addresses(inputs)
        if addresses is None:
            return None
        fresh = [np.empty(dims, dtype) for dims, dtype in self.fresh_shapes]
        failed, seconds = self.instance().run_timed((*addresses, *fresh))
        if failed != -1:
            raise self.failure(failed)
        per_step = [(0.0, 0.0)] * len(self.steps)
        for index, spent in zip(self.table_steps, seconds, strict=True):
            per_step[index] = spent
        return self._outputs(fresh), per_step

    def _addresses(self, inputs: list[Any]) -> list[Any] | None:
        """The run's input arrays in their planned layouts (copied in where only the strides differ), or None."""
        addresses = []
        for k, (x, (shape, strides, dtype)) in enumerate(zip(inputs, self.in_layouts, strict=True)):
            if not isinstance(x, np.ndarray) or x.shape != shape or x.dtype != dtype:
                return None
            if x.strides != strides:  # e.g. an NCHW model input to a channels-last segment: copied in
                copy = self._copiers.get((k, x.strides))
                if copy is None:
                    copy = self._copiers[(k, x.strides)] = _CopyIn(x, self.in_layouts[k])
                x = inputs[k] = copy(x)
            addresses.append(x)
        return addresses

    def _outputs(self, fresh: list[np.ndarray]) -> list[Any]:
        # a member may have another type than its buffer's root (a u8 sum written over an s8 residual)
        return [np.ndarray(shape, dtype, a, offset, strides) if (a := fresh[g]).strides != strides or offset
                or a.shape != shape or a.dtype != dtype else a for g, shape, strides, offset, dtype in self.out_views]

    def failure(self, failed: int) -> SegmentError:
        """The error of a native run that returned ``failed``: the index in ``steps`` of the step whose primitive
        failed, or -2 (pointing a memory object at a run's buffer failed)."""
        if failed >= 0:
            return SegmentError(self.steps[failed].node, DnnlError("oneDNN execution failed"))
        return SegmentError(self.node, DnnlError("oneDNN: pointing a buffer at a run's array failed"))

    def _python(self, inputs: list[Any]) -> list[Any]:
        """The steps' own kernels (an input of another dtype or shape than planned, or not an array)."""
        values: dict[int, Any] = {**self._constants, -1: None, **dict(zip(self.ins, inputs, strict=True))}
        for st in self.steps:
            try:
                outs = st.kernel.fn([values[s] for s in st.ins])
            except Exception as e:  # noqa: BLE001 - name the node whose kernel failed
                raise SegmentError(st.node, e) from e
            values.update(zip(st.outs, outs, strict=False))
        return [values[s] for s in self.outs]

    def instance(self) -> SegmentInstance:
        threads = torch.get_num_threads()
        instances = getattr(self._local, "by_threads", None)
        if instances is None:
            instances = self._local.by_threads = {}
        inst = instances.get(threads)
        if inst is None:
            inst = instances[threads] = SegmentInstance(self, threads)
        return inst


class SegmentInstance:
    """A segment on one thread at one thread count: its arena, its primitives' memory objects pointed there,
    the step and handle tables the native loop reads (``steps``, ``py_handles``: (memory, run buffer, offset);
    ``args``: the table arguments of ``_steploop.run``, which the request loop also serves from)."""

    def __init__(self, seg: Segment, threads: int):
        lib = library()
        if lib is None:  # segments are planned only with the binding
            raise DnnlError("native segment without the oneDNN binding")
        self._arena = np.empty(seg._arena_bytes + ALIGN, np.uint8)
        base = -self._arena.ctypes.data % ALIGN + self._arena.ctypes.data
        set_handle = lib.lib.dnnl_memory_set_data_handle
        steps, handles, self._keep = [], [], []
        for st, native in zip(seg.steps, seg.natives, strict=True):
            if native.primitive is None:
                continue
            b = native.primitive.binding(native.key(threads))
            self._keep.append(b)
            for buf, mem in zip(native.buffers, b.memories, strict=True):
                slot = (st.outs if buf.output else st.ins)[buf.index]
                g = seg._groups[slot]
                offset = g.offsets.get(slot, 0) + buf.offset
                if g.kind == "arena":
                    lib.check(set_handle(mem, base + g.offset + offset), "memory_set_data_handle")
                else:
                    handles.append((mem.value, g.runtime, offset))
            steps.append((b.execute, b.primitive.value, len(b.args), ctypes.addressof(b.args), st))
        self.steps = (StepEntry * len(steps))(*[StepEntry(*entry[:4]) for entry in steps])
        self._handles = (HandleEntry * len(handles))(*[HandleEntry(*h) for h in handles])
        self._stream = lib.stream().value
        fns = lib.lib
        self._execute, self._set_handle = fns.dnnl_primitive_execute, set_handle
        address = ctypes.cast
        self.args = (address(fns.dnnl_primitive_execute, ctypes.c_void_p).value,
                      address(set_handle, ctypes.c_void_p).value, self._stream,
                      ctypes.addressof(self.steps), len(steps), ctypes.addressof(self._handles), len(handles))
        self._py_steps = [(EXECUTE(e) if e else self._execute, p, n, a) for e, p, n, a, _ in steps]
        self.py_handles = handles
        self._index = seg.table_steps  # a failed table entry's step (views are not in the table)

    def run(self, addresses: tuple[Any, ...]) -> int:
        """-1, or the index (in the segment's steps) of the step that failed, or -2 (a handle failed).

        ``addresses``: the per-run buffers, arrays (the C loop reads their data pointers) or addresses."""
        if _steploop is not None:
            failed = _steploop.run(*self.args, addresses)
        else:
            failed = self._run_ctypes(addresses)
        return failed if failed < 0 else self._index[failed]

    def run_timed(self, buffers: tuple[Any, ...]) -> tuple[int, list[tuple[float, float]]]:
        """As :meth:`run` through ctypes, timing each table step: (-1 or the failed step's index, each step's
        (wall, CPU) seconds)."""
        if not self._point_handles(buffers):
            return -2, []
        stream, seconds = self._stream, []
        for i, (execute, prim, nargs, args) in enumerate(self._py_steps):
            t0, c0 = time.perf_counter(), time.process_time()
            if execute(prim, stream, nargs, args):
                return self._index[i], seconds
            seconds.append((time.perf_counter() - t0, time.process_time() - c0))
        return -1, seconds

    def _point_handles(self, buffers: tuple[Any, ...]) -> bool:
        """Point the per-run memory objects at the run's buffers (through ctypes); False if one failed."""
        addresses = [b if isinstance(b, int) else b.ctypes.data for b in buffers]
        return not any(self._set_handle(mem, addresses[buffer] + offset) for mem, buffer, offset in self.py_handles)

    def _run_ctypes(self, buffers: tuple[Any, ...]) -> int:
        if not self._point_handles(buffers):
            return -2
        stream = self._stream
        for i, (execute, prim, nargs, args) in enumerate(self._py_steps):
            if execute(prim, stream, nargs, args):
                return i
        return -1

