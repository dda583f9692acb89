"""The CPU's native request loop: an ``AsyncInferQueue``'s requests run by stream threads that never take the GIL.

Why: a request through the Python executor holds the GIL for ~40 us (the queue, the async request's stages,
the plan, the outputs) around ~20 us of native work for a small CNN. With 16 streams on 16 cores that Python is
what limits the rate, and worse, every GIL hand-over between 17 threads costs a wake-up: the bundled demo
model made 5,700 requests/s on the 16-core Xeon where openvino made 15,600 (70,900 with this loop). Here a
stream thread waits in C (``_steploop.loop_serve``), takes the next queued slot and runs the model's native
segment on that slot's input and output arrays; the Python per request is only the submitting thread's (put the
inputs, submit).

A model qualifies when its plan is one native segment that reads the model's inputs (C-contiguous, in the
input's element type; an input the segment wants in another layout, e.g. an NCHW image for a channels-last
convolution, is reordered by a oneDNN reorder the stream thread runs first, into a buffer of its own) and writes
each output whole into one dense array, with one thread per stream (streams of several threads share their
threads between models: see :func:`.streams.stream_executor`) and without ``PERF_COUNT``. A job whose arrays do
not fit (an input of another shape, an output tensor the user set in another layout) runs through the request in
Python on the same stream thread (the hook's ``RUN_IN_PYTHON``).
"""

from __future__ import annotations

import atexit
import ctypes
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from vinerun.plugin_api.kernel_registry import node_error
from vinerun.plugin_api.request_loop import Hook
from vinerun.plugins.cpu.kernels._dnnl import DnnlError, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Reorder
from vinerun.plugins.cpu.kernels._native import dense_value
from vinerun.plugins.cpu.native_segment import HandleEntry, Segment, StepEntry, input_reorder, permutation
from vinerun.plugins.cpu.streams import start_stream_thread

try:
    from vinerun.plugins.cpu import _steploop  # type: ignore[attr-defined]
except ImportError:  # built without a C compiler
    _steploop = None

if TYPE_CHECKING:
    from vinerun.plugins.cpu.compiled_model import CPUCompiledModel

JOB_NATIVE, JOB_NOTIFY, JOB_PYTHON = 0, 1, 2  # as _steploop.c's
EXIT_GRACE_S = 10.0
_live: weakref.WeakSet[NativeRequestLoop] = weakref.WeakSet()


class _Layout:
    """Where a model's whole-plan segment reads its inputs and writes its outputs, in the loop's address order:
    the segment's inputs (``input_of``: the model input each is; ``reorders``: the reorder into the planned
    layout where it is not the dense one), then its output buffers (``output_of``: the model output each is)."""

    def __init__(self, seg: Segment, input_of: list[int], reorders: list[Reorder | None], output_of: list[int]):
        self.seg, self.input_of, self.reorders, self.output_of = seg, input_of, reorders, output_of
        self.inputs = [(shape, dtype) for shape, _, dtype in seg.in_layouts]
        self.outputs = [(shape, dtype) for shape, dtype in seg.fresh_shapes]
        self.count = len(input_of) + len(output_of)
        self.n_reorders = sum(r is not None for r in reorders)


def whole_plan_layout(compiled: CPUCompiledModel) -> _Layout | None:
    """The layout of the native request loop for ``compiled``, or None where it does not qualify (module doc)."""
    plan = compiled.plan
    if (_steploop is None or not hasattr(_steploop, "loop_serve") or compiled.specialized is not None
            or compiled.streams.threads_per_stream != 1 or compiled.values.get("PERF_COUNT")
            or len(plan.items) != 1 or not isinstance(plan.items[0], Segment) or plan._copy_outputs):
        return None
    seg = plan.items[0]
    if list(plan.output_slots) != list(seg.outs) or len(set(seg.outs)) != len(seg.outs):
        return None
    if any(s not in plan.input_slots for s in seg.ins):
        return None
    reorders: list[Reorder | None] = []
    for shape, strides, dtype in seg.in_layouts:
        if strides == dense_value(shape, dtype)[1]:
            reorders.append(None)
            continue
        planned = (shape, strides, dtype)
        reorder = input_reorder(np.empty(shape, dtype), planned) if permutation(planned) else None
        if reorder is None:
            return None
        reorders.append(reorder)
    output_of = [-1] * len(seg.fresh_shapes)
    for j, (group, shape, strides, offset, dtype) in enumerate(seg.out_views):
        dims, buffer_dtype = seg.fresh_shapes[group]
        if (output_of[group] != -1 or offset or dims != shape or dtype != buffer_dtype
                or strides != dense_value(shape, dtype)[1]):
            return None
        output_of[group] = j
    if -1 in output_of:
        return None
    return _Layout(seg, [plan.input_slots.index(s) for s in seg.ins], reorders, output_of)


class _ThreadTables:
    """One stream thread's step and handle tables: its instance of the segment, after the reorders of the inputs
    that need one (each into a buffer of this thread's, which the segment then reads for good)."""

    def __init__(self, layout: _Layout, instance: Any):
        lib = library()
        assert lib is not None  # segments exist only with the binding
        set_handle = lib.lib.dnnl_memory_set_data_handle
        handles = list(instance.py_handles)  # (memory, runtime buffer, offset)
        first: list[StepEntry] = []
        self._keep: list[Any] = [instance]
        for position, reorder in enumerate(layout.reorders):
            if reorder is None:
                continue
            shape, strides, dtype = layout.seg.in_layouts[position]
            staging = np.empty(permutation((shape, strides, dtype))[0], dtype)  # type: ignore[index]
            binding = reorder.binding(1)
            source, target = binding.memories
            lib.check(set_handle(target, staging.ctypes.data), "memory_set_data_handle")
            for memory, _, offset in [h for h in handles if h[1] == position]:
                lib.check(set_handle(memory, staging.ctypes.data + offset), "memory_set_data_handle")
            handles = [h for h in handles if h[1] != position] + [(source.value, position, 0)]
            first.append(StepEntry(binding.execute, binding.primitive.value, len(binding.args),
                                    ctypes.addressof(binding.args)))
            self._keep += [binding, staging]
        steps = first + list(instance.steps)
        self._steps = (StepEntry * len(steps))(*steps)
        self._handles = (HandleEntry * len(handles))(*[HandleEntry(*h) for h in handles])
        execute, handle, stream = instance.args[:3]
        self.args = (execute, handle, stream, ctypes.addressof(self._steps), len(steps),
                     ctypes.addressof(self._handles), len(handles))


class NativeRequestLoop:
    """``slots`` requests run by one thread per stream of ``compiled`` (see the module doc); the threads start
    now and end when the loop is closed (by its queue's finalizer, or at exit)."""

    def __init__(self, compiled: CPUCompiledModel, layout: _Layout, slots: int, hook: Hook):
        self._layout = layout
        self._loop = _steploop.loop_new(slots, layout.count)
        # each slot's last arrays: the stream threads write into them by address, and a queue dropped while busy
        # frees its requests' tensors; the threads hold this loop (their target) until they leave C
        self._arrays: list[tuple[Any, ...]] = [()] * slots
        streams = compiled.streams
        self._threads = [threading.Thread(target=self._serve, args=(streams.stream_cpus(i) if streams.pinned else [],
                                                                     hook),
                                          name=f"CPU:{compiled.model.friendly_name}-loop-{i}", daemon=True)
                         for i in range(streams.num_streams)]
        for t in self._threads:
            t.start()
        _live.add(self)

    def _serve(self, cpus: list[int], hook: Hook) -> None:
        start_stream_thread(1, cpus, shared=False)
        # this thread's buffers, memory objects and oneDNN stream
        tables = _ThreadTables(self._layout, self._layout.seg.instance())
        _steploop.loop_serve(self._loop, *tables.args, hook)

    def take(self) -> int:
        return _steploop.loop_take(self._loop)

    def release(self, slot: int) -> None:
        _steploop.loop_release(self._loop, slot)

    def submit(self, slot: int, inputs: list[Any], outputs: list[np.ndarray] | None, notify: bool) -> None:
        addresses = self._addresses(inputs, outputs) if outputs is not None else None
        self._arrays[slot] = addresses or ()
        if addresses is None:
            _steploop.loop_submit(self._loop, slot, (), JOB_PYTHON)
        else:
            _steploop.loop_submit(self._loop, slot, addresses, JOB_NOTIFY if notify else JOB_NATIVE)

    def _addresses(self, inputs: list[Any], outputs: list[np.ndarray]) -> tuple[Any, ...] | None:
        """The arrays of a native run, in the loop's order, or None where one does not fit the segment's layout."""
        lay = self._layout
        arrays: list[Any] = []
        for k, (shape, dtype) in zip(lay.input_of, lay.inputs, strict=True):
            a = inputs[k] if k < len(inputs) else None
            if not (isinstance(a, np.ndarray) and a.shape == shape and a.dtype == dtype and a.flags.c_contiguous):
                return None
            arrays.append(a)
        for j, (shape, dtype) in zip(lay.output_of, lay.outputs, strict=True):
            a = outputs[j]
            if not (a.shape == shape and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable):
                return None
            arrays.append(a)
        return tuple(arrays)

    def wait(self, slot: int = -1, timeout: float | None = None) -> bool:
        return _steploop.loop_wait(self._loop, slot, -1.0 if timeout is None else max(0.0, timeout))

    def failures(self) -> list[tuple[int, BaseException]]:
        return [(slot, self.error(status)) for slot, status in _steploop.loop_failures(self._loop)]

    def error(self, status: int) -> BaseException:
        """The error of a failed native run: the node whose primitive failed, an input's reorder, or the buffers."""
        lay = self._layout
        if 0 <= status < lay.n_reorders:
            return node_error(lay.seg.node, DnnlError("oneDNN: reordering an input failed"))
        failed = lay.seg.failure(lay.seg.table_steps[status - lay.n_reorders] if status >= 0 else status)
        return node_error(failed.node, failed.cause)

    def latency(self, slot: int) -> float:
        return _steploop.loop_latency(self._loop, slot)

    def idle(self) -> int:
        return _steploop.loop_idle(self._loop)

    def close(self) -> None:
        _steploop.loop_close(self._loop)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))


def request_loop(compiled: CPUCompiledModel, slots: int, hook: Hook) -> NativeRequestLoop | None:
    """A native request loop for ``compiled`` where it qualifies, else None."""
    layout = whole_plan_layout(compiled)
    return None if layout is None else NativeRequestLoop(compiled, layout, slots, hook)


@atexit.register
def _close_at_exit() -> None:
    """Let the serving threads leave C before the interpreter goes (a thread inside a oneDNN call then aborts)."""
    loops = list(_live)
    for loop in loops:
        loop.close()
    deadline = time.monotonic() + EXIT_GRACE_S
    for loop in loops:
        loop.join(max(0.0, deadline - time.monotonic()))
