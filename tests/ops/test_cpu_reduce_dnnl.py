"""oneDNN reductions (ReduceMean / Sum / Max / Min over the innermost axes in memory): against the reference, bf16,
a channels-last convolution output reduced over its channels inside one native segment, reductions over axes of
size 1 as views, the NumPy path of small arrays, and the shapes and axes that keep the old kernel."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.convolution import Convolution
from vinerun.ops.matmul import MatMul
from vinerun.ops.pooling import AvgPool
from vinerun.ops.reduction import ReduceMax, ReduceMean, ReduceMin, ReduceSum
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels.reduce_dnnl import MAX_ROWS

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(34)
BF16 = np.dtype(ml_dtypes.bfloat16)
OPS = {"ReduceMean": ReduceMean, "ReduceSum": ReduceSum}
# relative tolerance of f32 sums against the reference (f64): oneDNN adds in another order than NumPy and ATen
SUM_RTOL = {"ReduceMean": 1e-5, "ReduceSum": 1e-5, "ReduceMax": 0, "ReduceMin": 0}


def reduce(op: str, x, axes, keep: bool):
    return OPS[op](x, Constant(np.array(axes, np.int64)), keep_dims=keep)


def compiled_step(model: Model):
    compiled = ov.Core().compile_model(model, "CPU", F32)
    return compiled, compiled._impl.plan.steps[0].kernel.exec_type


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize(("shape", "axes"), [((4, 8, 1024), [1, 2]), ((2, 4, 8, 256), [3]), ((4, 8, 1024), [-1]),
                                             ((2, 16, 24, 24), [1, 2, 3]), ((16, 1024), [0, 1])])
@pytest.mark.parametrize("keep", [True, False])
def test_f32_innermost_axes(op, shape, axes, keep):
    p = Parameter(Type.f32, list(shape))
    model = Model([reduce(op, p, axes, keep)], [p])
    compiled, kind = compiled_step(model)
    assert kind == "onednn_reduce_" + op[len("Reduce"):].lower()
    x = RNG.standard_normal(shape).astype(np.float32)
    got, want = compiled.create_infer_request().infer([x])[0], run_reference(model, [x])[0]
    assert got.shape == want.shape and got.flags.c_contiguous
    scale = np.abs(x).max() if op in ("ReduceSum", "ReduceMean") else 0.0
    np.testing.assert_allclose(got, want, rtol=SUM_RTOL[op], atol=SUM_RTOL[op] * scale)


@pytest.mark.parametrize("op", sorted(OPS))
def test_bf16(op):
    p = Parameter(BF16, [2, 16, 32, 32])
    model = Model([reduce(op, p, [1, 2, 3], True)], [p])  # not [2, 3]: a spatial mean becomes an AvgPool
    compiled, kind = compiled_step(model)
    assert kind.startswith("onednn_reduce_")
    x = RNG.standard_normal((2, 16, 32, 32)).astype(BF16)
    got = compiled.create_infer_request().infer([x])[0]
    assert got.dtype == BF16
    # f32 accumulation, one rounding to bf16: a bf16 ulp (2^-8 relative) from the reference's f32 result
    want = run_reference(model, [x])[0].astype(np.float32)
    atol = 2 ** -8 * (np.abs(want).max() if op != "ReduceSum" else 128)  # a sum of 16k values: rounding errors
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2 ** -8, atol=atol)


@pytest.mark.parametrize("op", sorted(OPS))
def test_other_axes_keep_the_old_kernel(op):
    """oneDNN 3.2 has only its reference implementation for outer axes: ATen runs them."""
    p = Parameter(Type.f32, [64, 300])
    model = Model([reduce(op, p, [0], False)], [p])
    compiled, kind = compiled_step(model)
    assert kind.startswith("aten_")
    x = RNG.standard_normal((64, 300)).astype(np.float32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([x])[0], run_reference(model, [x])[0],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("shape", "axes"), [((1, 257, 101, 2), [3]), ((128, 768), [1]), ((2, 16, 24, 24), [1])])
def test_many_rows_keep_the_old_kernel(shape, axes):
    """oneDNN's reduction costs ~0.2 us per value it keeps (2.3 ms for a spectrogram's 26k magnitudes, ATen
    0.1 ms): more than MAX_ROWS kept values take ATen, from Python and in segments (no native form)."""
    assert int(np.prod([d for a, d in enumerate(shape) if a not in axes])) > MAX_ROWS
    p = Parameter(Type.f32, list(shape))
    model = Model([reduce("ReduceSum", p, axes, False)], [p])
    compiled, kind = compiled_step(model)
    assert kind == "aten_sum" and compiled._impl.plan.steps[0].kernel.native is None
    x = RNG.standard_normal(shape).astype(np.float32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([x])[0], run_reference(model, [x])[0],
                               rtol=1e-5, atol=1e-5)


def test_dynamic_shapes_keep_the_old_kernel():
    p = Parameter(Type.f32, PartialShape([Dimension.dynamic(), 4096]))
    model = Model([reduce("ReduceMean", p, [1], True)], [p])
    compiled, kind = compiled_step(model)
    assert kind == "aten_mean" and compiled._impl.plan.steps[0].kernel.native is None
    x = RNG.standard_normal((3, 4096)).astype(np.float32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([x])[0], run_reference(model, [x])[0],
                               rtol=1e-5, atol=1e-6)


SAME = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}


@pytest.mark.parametrize("op", sorted(OPS))
def test_the_channels_of_a_channels_last_convolution_in_one_segment(op, monkeypatch):
    """conv -> reduce over the channels (innermost in channels-last memory) -> conv -> global pool: one segment,
    and the same bits from the Python steps (oneDNN too at this size: 256 channels; 6 x 6 positions, at most
    MAX_ROWS)."""
    x = Parameter(Type.f32, [1, 8, 6, 6])
    y = Convolution(x, Constant(RNG.standard_normal((256, 8, 3, 3)).astype(np.float32) * 0.2), **SAME)
    r = reduce(op, y, [1], True)
    z = Convolution(r, Constant(RNG.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.2), **SAME)
    model = Model([AvgPool(z, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[6, 6])], [x])
    seg, _ = check_one_segment(model, RNG.standard_normal((1, 8, 6, 6)).astype(np.float32), monkeypatch, op)
    (step,) = [s for s in seg.steps if s.node.type_name == op]
    assert step.kernel.exec_type.startswith("onednn_reduce_")


@pytest.mark.parametrize("op", sorted(OPS))
def test_small_arrays_from_python_and_in_a_segment(op, monkeypatch):
    """NumPy from Python, oneDNN in a segment: maxima and minima the same bits, sums and means an ulp or two
    apart."""
    p = Parameter(Type.f32, [4, 300])
    model = Model([Relu(reduce(op, Relu(p), [1], False))], [p])
    x = RNG.standard_normal((4, 300)).astype(np.float32)
    plan = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    (seg,) = plan.items
    got = plan.run([x])[0]
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")
    python = ov.Core().compile_model(model, "CPU", F32)._impl.plan.run([x])[0]
    if op in ("ReduceMax", "ReduceMin"):
        np.testing.assert_array_equal(python, got)
    else:
        np.testing.assert_allclose(python, got, rtol=1e-6, atol=1e-5)  # sums of 300 values ~1: rounding order
    np.testing.assert_allclose(got, run_reference(model, [x])[0], rtol=1e-5, atol=1e-5)


def test_a_mean_over_axes_of_size_one_is_a_view_in_segments(monkeypatch):
    """silero's ReduceMean of a [1, 1] over axis 1: a copy from Python, a view in a segment."""
    p = Parameter(Type.f32, [1, 1, 1])
    y = Relu(MatMul(p, Constant(np.ones((1, 1), np.float32))))
    model = Model([Relu(reduce("ReduceMean", y, [1], False))], [p])
    x = np.array([[[-2.5]]], np.float32)
    seg, got = check_one_segment(model, x, monkeypatch, "ReduceMean", tolerance=0)
    (step, view) = [(s, n) for s, n in zip(seg.steps, seg.natives, strict=True) if s.node.type_name == "ReduceMean"][0]
    assert view.primitive is None and step.kernel.exec_type == "aten_mean"
    x = np.array([[[3.5]]], np.float32)
    np.testing.assert_array_equal(ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([x])[0],
                                  [[3.5]])


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize(("shape", "axes", "keep"), [((1, 128), [1], True), ((6,), [0], False),
                                                     ((3, 5, 7), [0, 2], False), ((1, 1), [1], False),
                                                     ((2, 1, 3), [1], True)])  # the last two: a copy
def test_small_arrays_run_numpy(op, shape, axes, keep):
    p = Parameter(Type.f32, list(shape))
    model = Model([reduce(op, p, axes, keep)], [p])
    compiled, kind = compiled_step(model)
    assert kind.startswith("aten_")
    x = RNG.standard_normal(shape).astype(np.float32)
    got, want = compiled.create_infer_request().infer([x])[0], run_reference(model, [x])[0]
    assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", [ReduceMax, ReduceMin])
def test_max_and_min_keep_nan_inside_segments(monkeypatch, op):
    """oneDNN's max/min reductions drop a NaN: ReduceMax / ReduceMin keep the kernel that propagates it, also
    after a native step (an Add)."""
    a, b = Parameter(Type.f32, [4, 300]), Parameter(Type.f32, [4, 300])
    model = Model([op(Add(a, b), Constant(np.array([1], np.int64)), keep_dims=True)], [a, b])
    x = RNG.standard_normal((4, 300)).astype(np.float32)
    x[1, 7] = np.nan
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([x, x])[0]
    assert np.isnan(got[1, 0]) and not np.isnan(got[[0, 2, 3], 0]).any()
