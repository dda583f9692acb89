"""Native segments of the CPU plan: runs of oneDNN steps executed by one call on buffers planned in advance.

A segment must give exactly what the same steps give from Python (the same primitives run), hand back arrays
that the next inference does not overwrite, take inputs in any layout, and run on several threads at once.
"""

from __future__ import annotations

import ctypes
import threading

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.errors import InferenceError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.models.cnn import cnn_inputs, cnn_model
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.convolution import Convolution
from vinerun.ops.pooling import AvgPool
from vinerun.plugins.cpu import native_segment
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16
from vinerun.plugins.cpu.native_segment import Segment

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(11)
SAME = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}


def rand(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def plan_of(model, config=F32):
    return ov.Core().compile_model(model, "CPU", config)._impl.plan


def segments(plan):
    return [item for item in plan.items if isinstance(item, Segment)]


def conv_chain(n: int, pool: bool = False) -> Model:
    """``n`` 3x3 convolutions + ReLU on [1, 8, 12, 12], then a global average pool if asked."""
    x = Parameter(Type.f32, [1, 8, 12, 12])
    y = x
    for _ in range(n):
        y = Relu(Convolution(y, Constant(rand([8, 8, 3, 3]) * 0.3), **SAME))
    if pool:
        y = AvgPool(y, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[12, 12])
    return Model([y], [x])


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_cnn_segments_give_what_the_python_steps_give(precision, monkeypatch):
    if precision == "bf16" and not mkldnn_bf16():
        pytest.skip("no bf16 oneDNN kernels on this CPU")
    config = {"INFERENCE_PRECISION_HINT": precision}
    x = cnn_inputs()["image"]
    native = plan_of(cnn_model(), config)
    assert segments(native) and max(len(s.steps) for s in segments(native)) >= 6
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")
    python = plan_of(cnn_model(), config)
    assert not segments(python)
    got, want = native.run([x])[0], python.run([x])[0]
    np.testing.assert_array_equal(got, want)
    if precision == "f32":
        np.testing.assert_allclose(got, run_reference(cnn_model(), [x])[0], rtol=1e-4, atol=1e-4)


def test_the_ctypes_loop_gives_what_the_compiled_loop_gives(monkeypatch):
    x = cnn_inputs()["image"]
    want = plan_of(cnn_model()).run([x])[0]
    monkeypatch.setattr(native_segment, "_steploop", None)
    np.testing.assert_array_equal(plan_of(cnn_model()).run([x])[0], want)


def test_handed_back_arrays_outlive_the_next_inference():
    model = conv_chain(3, pool=True)
    plan = plan_of(model)
    (seg,) = segments(plan)
    assert len(seg.steps) == 4 and seg.outs == plan.output_slots  # the pool's output is the model's
    a, b = rand([1, 8, 12, 12]), rand([1, 8, 12, 12])
    first = plan.run([a])[0]
    kept = first.copy()
    second = plan.run([b])[0]
    np.testing.assert_array_equal(first, kept)
    assert not np.shares_memory(first, second)
    np.testing.assert_allclose(second, run_reference(model, [b])[0], rtol=1e-4, atol=1e-4)


def test_an_input_in_another_layout_is_copied_into_the_planned_one():
    model = conv_chain(2, pool=True)
    plan = plan_of(model)
    x = np.ascontiguousarray(rand([1, 12, 12, 8])).transpose(0, 3, 1, 2)  # channels-last strides
    wrong = np.asfortranarray(rand([1, 8, 12, 12]))
    for data in (x, wrong):
        np.testing.assert_allclose(plan.run([data])[0], run_reference(model, [np.ascontiguousarray(data)])[0],
                                   rtol=1e-4, atol=1e-4)
    (seg,) = segments(plan)
    assert all(copy.reorder is not None for copy in seg._copiers.values())  # copied in by oneDNN reorders


def test_arena_reuses_the_memory_of_dead_values():
    plan = plan_of(conv_chain(6, pool=True))
    (seg,) = segments(plan)
    one = 8 * 12 * 12 * 4  # bytes of one activation, a multiple of the 64-byte alignment
    assert seg._arena_bytes == 2 * one  # a layer's input and output; the pool's output is handed back


def test_threads_run_a_segment_each_on_its_own_buffers():
    model = conv_chain(4, pool=True)
    plan = plan_of(model)
    inputs = [rand([1, 8, 12, 12]) for _ in range(4)]
    want = [plan.run([x])[0] for x in inputs]
    errors: list[str] = []

    def worker(k: int) -> None:
        for _ in range(25):
            got = plan.run([inputs[k]])[0]
            if not np.array_equal(got, want[k]):
                errors.append(f"thread {k}: wrong result")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_sum_never_overwrites_its_own_source():
    """conv(r) + r: the destination cannot be r's buffer while the convolution reads r."""
    x = Parameter(Type.f32, [1, 8, 7, 7])
    r = Relu(Convolution(x, Constant(rand([8, 8, 3, 3])), **SAME))
    y = Relu(Add(Convolution(r, Constant(rand([8, 8, 3, 3])), **SAME), r))
    z = Relu(Convolution(y, Constant(rand([8, 8, 3, 3])), **SAME))
    model = Model([AvgPool(z, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[7, 7])], [x])
    data = rand([1, 8, 7, 7])
    np.testing.assert_allclose(plan_of(model).run([data])[0], run_reference(model, [data])[0], rtol=1e-4, atol=1e-3)


def test_profiling_still_times_each_node():
    compiled = ov.Core().compile_model(conv_chain(3, pool=True), "CPU", {**F32, "PERF_COUNT": True})
    request = compiled.create_infer_request()
    request.infer([rand([1, 8, 12, 12])])
    executed = [p for p in request.get_profiling_info() if p.status == ov.ProfilingInfo.Status.EXECUTED]
    assert sum(p.node_type in ("Convolution", "FusedConvolution") for p in executed) == 3


def test_profiling_times_the_steps_inside_their_segment(monkeypatch):
    """PERF_COUNT runs a segment natively, timing its primitives one by one (not each step's Python kernel, which
    allocates and copies what the native path does not), and gives what an unprofiled run gives."""
    model, x = conv_chain(3, pool=True), rand([1, 8, 12, 12])
    compiled = ov.Core().compile_model(model, "CPU", {**F32, "PERF_COUNT": True})
    plan = compiled._impl.plan
    assert segments(plan)
    for segment in segments(plan):
        for step in segment.steps:
            monkeypatch.setattr(step.kernel, "fn", lambda inputs: pytest.fail("a segment step ran from Python"))
    request = compiled.create_infer_request()
    got = request.infer([x])[0]
    np.testing.assert_allclose(got, run_reference(model, [x])[0], rtol=1e-4, atol=1e-4)
    executed = [p for p in request.get_profiling_info() if p.status == ov.ProfilingInfo.Status.EXECUTED]
    convolutions = [p for p in executed if p.node_type in ("Convolution", "FusedConvolution")]
    assert len(convolutions) == 3 and all(p.real_time.total_seconds() > 0 for p in convolutions)
    calls = []
    monkeypatch.setattr(Segment, "_python", lambda self, inputs: calls.append(1) or pytest.fail("fell back"))
    request.infer([np.asfortranarray(x)])  # another layout: copied in, still native
    assert not calls


def test_compiled_loop_contract():
    steploop = native_segment._steploop
    if steploop is None:
        pytest.skip("vinerun was installed without a C compiler: the ctypes loop runs")
    assert steploop.run(0, 0, 0, 0, 0, 0, 0, ()) == -1  # nothing to run
    handle = (native_segment.HandleEntry * 1)(native_segment.HandleEntry(0, 3))  # buffer 3 of a 1-tuple
    assert steploop.run(0, 0, 0, 0, 0, ctypes.addressof(handle), 1, (0,)) == -2  # refused, nothing called
    with pytest.raises(TypeError):
        steploop.run(0, 0, 0, 0, 0, 0, 0, [])
    with pytest.raises(TypeError):
        steploop.run(0, 0, 0, 0, 0, 0, 0, ("not a buffer",))


def test_request_loop_contract():
    """The C request loop refuses what would corrupt it: a slot not taken, a wrong buffer count, a bad slot."""
    steploop = native_segment._steploop
    if steploop is None:
        pytest.skip("vinerun was installed without a C compiler")
    with pytest.raises(ValueError):
        steploop.loop_new(0, 1)
    loop = steploop.loop_new(2, 1)
    with pytest.raises(RuntimeError, match="not taken"):
        steploop.loop_submit(loop, 0, (0,), 0)
    assert steploop.loop_idle(loop) == 2 and steploop.loop_wait(loop, -1, 0.0)
    slot = steploop.loop_take(loop)
    assert slot == 0 and steploop.loop_idle(loop) == 1
    with pytest.raises(ValueError, match="1 buffers expected"):
        steploop.loop_submit(loop, slot, (0, 0), 0)
    steploop.loop_release(loop, slot)
    assert steploop.loop_take(loop) == 1  # the slot idle longest first
    with pytest.raises(IndexError):
        steploop.loop_wait(loop, 5, 0.0)
    assert steploop.loop_failures(loop) == []
    steploop.loop_close(loop)
    slot = steploop.loop_take(loop)
    with pytest.raises(RuntimeError, match="closed"):
        steploop.loop_submit(loop, slot, (0,), 0)


def test_request_loop_serves_reports_failures_and_calls_back():
    """A serving thread runs queued slots: a failing step is kept for ``loop_failures`` (no hook), or handed to the
    hook (``notify``); a Python job goes to the hook as RUN_IN_PYTHON (-3); closing ends the thread."""
    import threading

    from vinerun.plugins.cpu.kernels._dnnl import EXECUTE

    steploop = native_segment._steploop
    if steploop is None:
        pytest.skip("vinerun was installed without a C compiler")
    ran = []
    failing = EXECUTE(lambda primitive, stream, nargs, args: ran.append(primitive) or 7)  # ctypes takes the GIL
    steps = (native_segment.StepEntry * 1)(native_segment.StepEntry(ctypes.cast(failing, ctypes.c_void_p).value,
                                                                     42, 0, 0))
    loop = steploop.loop_new(2, 0)
    hooked = []
    server = threading.Thread(target=steploop.loop_serve, daemon=True, args=(
        loop, 0, 0, 0, ctypes.addressof(steps), 1, 0, 0, lambda slot, status: hooked.append((slot, status))))
    server.start()
    for kind in (0, 1, 2):  # native, native with the hook, Python
        steploop.loop_submit(loop, steploop.loop_take(loop), (), kind)
        assert steploop.loop_wait(loop, -1, 10.0)
    assert ran == [42, 42]
    assert steploop.loop_failures(loop) == [(0, 0)]  # slot 0, step 0; the hooked failure is not repeated
    assert hooked == [(1, 0), (0, -3)]
    assert steploop.loop_latency(loop, 0) >= 0.0
    steploop.loop_close(loop)
    server.join(10)
    assert not server.is_alive()


def test_compiled_address_reader_is_numpys_data_pointer():
    steploop = native_segment._steploop
    if steploop is None:
        pytest.skip("vinerun was installed without a C compiler: NumPy's ctypes.data is used")
    x = rand([3, 8])
    frozen = x.copy()
    frozen.flags.writeable = False
    for a in (x, x[1:, ::-2], x.T, x.astype(ml_dtypes.bfloat16), frozen, np.zeros(()), np.zeros((0, 4))):
        assert steploop.address(a) == a.ctypes.data
    with pytest.raises(TypeError):
        steploop.address(1.5)


def test_a_failed_primitive_names_its_node(monkeypatch):
    plan = plan_of(conv_chain(3, pool=True))
    (seg,) = segments(plan)
    monkeypatch.setattr(native_segment.SegmentInstance, "run", lambda self, addresses: 1)  # as if step 1 failed
    with pytest.raises(InferenceError, match=rf"'{seg.steps[1].node.friendly_name}'.*oneDNN execution failed"):
        plan.run([rand([1, 8, 12, 12])])
