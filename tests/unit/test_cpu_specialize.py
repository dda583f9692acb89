"""Plans specialized to the input shapes of a dynamic model's calls (vinerun.plugin_api.specialize): compiled by
the call that makes a shape's plan due (it repeated, and its calls spent what the compile costs), other threads
served by the dynamic plan meanwhile; not for shapes that only recur now and then; static enough for native
segments, If branches included; bounded; off with CPU_RUNTIME_CACHE_CAPACITY=0."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu, Sigmoid
from vinerun.ops.arithmetic import Add
from vinerun.ops.control_flow import BodyOutputDescription, If, InvariantInputDescription
from vinerun.ops.convolution import Convolution
from vinerun.plugin_api import specialize
from vinerun.plugin_api.specialize import TIMED, SpecializedPlans
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.native_segment import Segment
from vinerun.plugins.cpu.plan import Plan

F32 = {"INFERENCE_PRECISION_HINT": "f32"}
RNG = np.random.default_rng(5)


def rand(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def conv_model(width=None):
    """3x3 convolution + bias + Relu, three times, on ``[1, 4, 6, width]`` (a dynamic width by default)."""
    x = Parameter(Type.f32, [1, 4, 6, -1 if width is None else width])
    y = x
    for c_in, c_out in ((4, 8), (8, 8), (8, 8)):
        y = Relu(Add(Convolution(y, Constant(rand([c_out, c_in, 3, 3])), strides=[1, 1], dilations=[1, 1],
                                 pads_begin=[1, 1], pads_end=[1, 1]), Constant(rand([1, c_out, 1, 1]))))
    return Model([y], [x])


def compiled_and_request(model, config=None):
    compiled = ov.Core().compile_model(model, "CPU", {**F32, **(config or {})})
    return compiled, compiled.create_infer_request()


def until_specialized(compiled, request, inputs: list, calls: int = 2000) -> int:
    """Calls ``request`` with ``inputs`` until their shapes have a plan; returns how many calls that took."""
    for n in range(1, calls + 1):
        request.infer(inputs)
        if compiled._impl.specialized.ready():
            return n
    pytest.fail(f"no plan after {calls} calls")


def test_a_repeated_shape_gets_a_static_plan_with_the_same_outputs():
    model = conv_model()
    compiled, request = compiled_and_request(model)
    impl = compiled._impl
    data = rand([1, 4, 6, 40])
    first = request.infer([data])[0].copy()
    assert impl.specialized.ready() == []  # seen once: no plan yet
    assert until_specialized(compiled, request, [data]) >= 1  # the call that makes it due compiles it, runs on it
    assert impl.specialized.ready() == [((1, 4, 6, 40),)]
    plan = impl.plan_for([data])
    assert plan is not impl.plan
    assert all(s.node.get_output_partial_shape(0).is_static for s in plan.steps)
    if library() is not None:
        assert any(isinstance(item, Segment) for item in plan.items)  # static: the convolutions run natively
    got = request.infer([data])[0]
    np.testing.assert_allclose(got, first, rtol=1e-4, atol=1e-3)  # other kernels: f32 rounding
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-4, atol=1e-3)
    other = rand([1, 4, 6, 17])  # another length still runs the dynamic plan
    assert impl.plan_for([other]) is impl.plan
    np.testing.assert_allclose(request.infer([other])[0], run_reference(model, [other])[0], rtol=1e-4, atol=1e-3)


def test_each_plan_has_its_own_thread_governor():
    # the dynamic plan's call times must not decide the specialized plan's thread count
    compiled, request = compiled_and_request(conv_model())
    impl = compiled._impl
    data = rand([1, 4, 6, 40])
    until_specialized(compiled, request, [data])
    specialized = impl.plan_for([data])
    assert set(request._impl._governors) == {id(impl.plan), id(specialized)}
    assert request._impl._governors[id(specialized)].times[1] or \
        request._impl._governors[id(specialized)].times[impl.streams.threads_per_stream]


def test_off_with_a_zero_runtime_cache_capacity():
    compiled, request = compiled_and_request(conv_model(), {"CPU_RUNTIME_CACHE_CAPACITY": 0})
    assert compiled._impl.specialized is None
    assert compiled.get_property("CPU_RUNTIME_CACHE_CAPACITY") == 0


def test_a_static_model_has_no_specialized_plans():
    compiled, _ = compiled_and_request(conv_model(12))
    assert compiled._impl.specialized is None


def test_at_most_limit_shapes_and_one_sighting_takes_no_place():
    built = []
    plans = SpecializedPlans(lambda shapes: built.append(shapes) or shapes, limit=2, sightings=2)
    arrays = {n: np.zeros((1, n), np.float32) for n in range(1, 6)}
    plans.get([arrays[5]])  # once: not compiled
    for n in (1, 2, 3, 4):
        for _ in range(3):
            plans.get([arrays[n]])
    plans.wait()
    assert sorted(built) == [((1, 1),), ((1, 2),)]
    assert plans.get([arrays[1]]) == ((1, 1),) and plans.get([arrays[3]]) is None


def test_a_failed_build_leaves_the_dynamic_plan_serving_and_frees_its_place():
    def build(shapes):
        if shapes == ((2,),):
            raise ValueError("these shapes contradict the model")
        return shapes

    plans = SpecializedPlans(build, limit=1, sightings=1)
    assert plans.get([np.zeros(2)]) is None
    plans.wait()
    assert plans.get([np.zeros(2)]) is None  # failed: not tried again
    plans.get([np.zeros(3)])
    plans.wait()
    assert plans.get([np.zeros(3)]) == ((3,),)


def test_a_plan_is_due_once_its_shapes_calls_spent_what_the_compile_costs():
    """Rent or buy: with a compile of 1 s expected, a shape repeated at once is not compiled until its calls on
    the dynamic plan took 1 s; then the measured compile time is the next shape's estimate."""
    built = []

    def build(shapes):
        built.append(shapes)
        return shapes

    plans = SpecializedPlans(build, sightings=2, cost=1.0)
    a, b = np.zeros((1, 5), np.float32), np.zeros((1, 6), np.float32)
    for _ in range(3):
        assert plans.get([a]) is None
        plans.ran([a], 0.3)
    assert built == []  # 0.9 s spent: not yet
    plans.ran([a], 0.2)
    assert plans.get([a]) == ((1, 5),) and built == [((1, 5),)]
    plans.get([b])
    plans.ran([b], 0.01)  # the build above took far less than 1 s: b is due after its next sighting
    assert plans.get([b]) == ((1, 6),)


def test_a_plan_that_saved_little_makes_the_next_wait_longer():
    """The first plan saves a quarter of a call (16 -> 12 ms): the next shape is compiled only once its calls on
    the dynamic plan spent four times the compile (what a plan would save must pay for it)."""
    plans = SpecializedPlans(lambda shapes: shapes, sightings=2, cost=0.1)
    a, b = np.zeros((1, 5), np.float32), np.zeros((1, 6), np.float32)
    for _ in range(8):
        plans.get([a])
        plans.ran([a], 0.016)
    assert plans.ready() == [((1, 5),)]
    for _ in range(8):
        plans.ran([a], 0.012, specialized=True)
    plans._cost = 0.1  # the build above was instant; say it took 0.1 s
    for _ in range(24):  # 0.38 s spent, a quarter of it 0.096 s: not yet
        assert plans.get([b]) is None
        plans.ran([b], 0.016)
    assert plans.get([b]) is None
    plans.ran([b], 0.02)  # 0.4 s: now
    assert plans.get([b]) == ((1, 6),)


def test_a_plan_slower_than_the_dynamic_plan_is_dropped():
    """A static plan that loses to the dynamic one (5.5 against 3.3 ms a call, as a spectrogram's reduction once
    made one) serves no further calls, and its shape is not compiled again; a plan within SLOWER is kept."""
    built = []
    plans = SpecializedPlans(lambda shapes: built.append(shapes) or shapes, sightings=2, cost=0.01)
    a, b = np.zeros((1, 5), np.float32), np.zeros((1, 6), np.float32)
    for x, dynamic, static in ((a, 0.0033, 0.0055), (b, 0.0033, 0.0035)):
        for _ in range(8):
            plans.get([x])
            plans.ran([x], dynamic)
        assert plans.get([x]) is not None
        for _ in range(TIMED):
            plans.ran([x], static, specialized=True)
    assert plans.get([a]) is None and plans.get([b]) == ((1, 6),)
    for _ in range(20):
        plans.get([a])
        plans.ran([a], 0.0033)
    assert built == [((1, 5),), ((1, 6),)] and plans.ready() == [((1, 6),)]


def test_shapes_that_vary_more_than_they_repeat_compile_nothing():
    """PP-OCR's recogniser on text lines of many widths: each width recurs, but its calls never add up to a
    compile's cost."""
    plans = SpecializedPlans(lambda shapes: pytest.fail(f"built {shapes}"), sightings=2, cost=0.4)
    widths = [np.zeros((1, 3, 48, 32 * n), np.float32) for n in range(5, 10)]
    for _ in range(4):
        for array in widths:
            assert plans.get([array]) is None
            plans.ran([array], 0.016)
    plans.wait()


def test_inputs_without_a_shape_are_not_specialized():
    plans = SpecializedPlans(lambda shapes: pytest.fail("built"), sightings=1)
    assert plans.get([[1.0, 2.0]]) is None
    plans.wait()


def test_requests_from_several_threads_while_the_plan_compiles(monkeypatch):
    monkeypatch.setattr(specialize, "SIGHTINGS", 1)
    model = conv_model()
    compiled, _ = compiled_and_request(model)
    data = rand([1, 4, 6, 33])
    want = run_reference(model, [data])[0]
    errors = []

    def work():
        request = compiled.create_infer_request()
        for _ in range(20):
            try:
                np.testing.assert_allclose(request.infer([data])[0], want, rtol=1e-4, atol=1e-3)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    compiled._impl.specialized.wait()
    assert compiled._impl.specialized.ready() == [((1, 4, 6, 33),)]


def _if_model():
    """If(cond) over a dynamic-length signal: Conv1d + bias, then Relu or Sigmoid."""
    cond, x = Parameter(Type.boolean, []), Parameter(Type.f32, [1, 3, -1])
    w, b = Constant(rand([4, 3, 3])), Constant(rand([1, 4, 1]))
    bodies = []
    for act in (Relu, Sigmoid):
        px, pw, pb = Parameter(Type.f32, [1, 3, -1]), Parameter(Type.f32, [4, 3, 3]), Parameter(Type.f32, [1, 4, 1])
        conv = Convolution(px, pw, strides=[1], dilations=[1], pads_begin=[1], pads_end=[1])
        bodies.append(Model([act(Add(conv, pb))], [px, pw, pb]))
    ins = tuple(InvariantInputDescription(i + 1, i) for i in range(3))
    outs = (BodyOutputDescription(0, 0),)
    node = If(cond, x, w, b, then_body=bodies[0], else_body=bodies[1], then_inputs=ins, else_inputs=ins,
              then_outputs=outs, else_outputs=outs)
    return Model([node.output(0)], [cond, x])


def test_if_branches_of_a_specialized_plan_are_static():
    model = _if_model()
    compiled, request = compiled_and_request(model)
    data = rand([1, 3, 25])
    for flag in (True, False, True):
        cond = np.array(flag)
        np.testing.assert_allclose(request.infer([cond, data])[0], run_reference(model, [cond, data])[0],
                                   rtol=1e-4, atol=1e-3)
    until_specialized(compiled, request, [np.array(True), data])
    plan = compiled._impl.plan_for([np.array(True), data])
    assert plan is not compiled._impl.plan
    for flag in (True, False):
        cond = np.array(flag)
        np.testing.assert_allclose(request.infer([cond, data])[0], run_reference(model, [cond, data])[0],
                                   rtol=1e-4, atol=1e-3)
    (if_step,) = [s for s in plan.steps if s.node.type_name == "If"]
    branch_plans = [c.cell_contents.plan for c in if_step.kernel.fn.__closure__
                    if hasattr(c.cell_contents, "plan")]
    assert len(branch_plans) == 2 and all(isinstance(p, Plan) for p in branch_plans)
    for p in branch_plans:
        assert all(s.node.get_output_partial_shape(0).is_static for s in p.steps)


def test_exiting_while_a_plan_compiles_is_clean():
    """The compile thread is not a daemon: a script that exits right after its calls waits for it (a daemon
    thread still inside oneDNN while Python finalizes crashed the process, ~1 exit in 4 with silero-vad)."""
    script = """
import numpy as np, vinerun as ov
from tests.unit.test_cpu_specialize import conv_model
compiled = ov.Core().compile_model(conv_model(), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
request = compiled.create_infer_request()
for _ in range(2):
    request.infer([np.ones((1, 4, 6, 50), np.float32)])
print("done")
"""
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                              cwd=str(Path(__file__).resolve().parents[2]))
        assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]


def test_a_shape_that_comes_back_only_now_and_then_is_not_compiled():
    """A KV cache growing by one per call and restarted: every shape recurs, none repeats recently."""
    plans = SpecializedPlans(lambda shapes: pytest.fail(f"built {shapes}"), sightings=2)
    cycle = [np.zeros((1, n), np.float32) for n in range(specialize.WINDOW + 1)]
    for _ in range(3):
        for array in cycle:
            assert plans.get([array]) is None
    plans.wait()
