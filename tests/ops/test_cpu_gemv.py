"""The streaming matrix-vector kernel: one-row f32 products by large constant weights (a classifier at batch 1)
take it, give what the reference gives (column and row tails, every epilogue, 1 and 2 threads, natively and
from Python), and every other product keeps oneDNN's matmul.
"""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Clamp, Relu
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.matmul import MatMul
from vinerun.plugins.cpu import device_info, native_segment
from vinerun.plugins.cpu.kernels import gemv
from vinerun.plugins.cpu.kernels._dnnl import library

pytestmark = pytest.mark.skipif(library() is None or not gemv.available(),
                                reason="needs the oneDNN binding and the C kernels (a C compiler at install)")
RNG = np.random.default_rng(3)


def classifier(k=1280, n=1000, rows=1, act=None, transpose_b=False, bias=True, residual=False) -> Model:
    """[scale ->] MatMul -> [bias] -> [activation] -> [+ residual]; the scale (a native element-wise step) puts
    the product in a native segment (a segment has two steps or more)."""
    x = Parameter(Type.f32, [rows, k])
    w = (RNG.standard_normal([n, k] if transpose_b else [k, n]) / np.sqrt(k)).astype(np.float32)
    params = [x]
    y = MatMul(Multiply(x, Constant(np.full([1, k], 0.5, np.float32))), Constant(w), transpose_b=transpose_b)
    if bias:
        y = Add(y, Constant(RNG.standard_normal([n]).astype(np.float32)))
    if act == "relu":
        y = Relu(y)
    elif act == "clamp":
        y = Clamp(y, min=-0.5, max=0.5)
    if residual:
        params.append(Parameter(Type.f32, [rows, n]))
        y = Add(y, params[-1])
    return Model([y], params)


def exec_types(model, config=F32):
    """The plan's exec types but the scale's."""
    steps = ov.Core().compile_model(model, "CPU", config)._impl.plan.steps
    return [s.kernel.exec_type for s in steps if s.node.type_name != "Multiply"]


def close(got, model, x):
    np.testing.assert_allclose(got, run_reference(model, [x])[0], rtol=1e-5, atol=1e-5)


def test_pack_lays_panels_end_to_end():
    w = RNG.standard_normal([5, 130]).astype(np.float32)
    packed = gemv.pack(w)
    assert packed.shape == (3, 5, gemv.PANEL) and packed.flags.c_contiguous
    np.testing.assert_array_equal(packed.transpose(1, 0, 2).reshape(5, -1)[:, :130], w)
    assert not packed[2, :, 130 - 128:].any()


@pytest.mark.parametrize("k,n", [(1280, 1000), (2048, 1000), (1023, 257), (257, 1025)])
@pytest.mark.parametrize("act", [None, "relu", "clamp"])
def test_classifier_runs_the_kernel_and_matches_the_reference(monkeypatch, k, n, act):
    model = classifier(k, n, act=act)
    assert exec_types(model) == ["gemv_matmul"]
    x = RNG.standard_normal([1, k]).astype(np.float32)
    check_one_segment(model, x, monkeypatch, "FusedMatMul", tolerance=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_counts_and_transposed_weights(threads):
    model = classifier(transpose_b=True, bias=False, act="relu")
    cm = ov.Core().compile_model(model, "CPU", {**F32, "INFERENCE_NUM_THREADS": threads})
    assert "gemv_matmul" in [s.kernel.exec_type for s in cm._impl.plan.steps]
    x = RNG.standard_normal([1, 1280]).astype(np.float32)
    close(cm.create_infer_request().infer({0: x})[0], model, x)


@pytest.mark.parametrize("model", [
    classifier(k=256, n=256),  # in cache: oneDNN's is as fast
    classifier(rows=2),  # a matrix product
    classifier(residual=True),  # a residual sum: oneDNN's binary post-op
], ids=["small", "two-rows", "residual"])
def test_other_products_keep_onednn(model):
    assert "gemv_matmul" not in exec_types(model)


def test_bf16_keeps_onednn():
    if not device_info.has_native_bf16():
        pytest.skip("no native bf16")
    assert "gemv_matmul" not in exec_types(classifier(), {"INFERENCE_PRECISION_HINT": "bf16"})


def test_custom_steps_on_the_ctypes_loop(monkeypatch):
    """Without the compiled step loop a segment runs from ctypes: a C kernel's step calls its own function."""
    monkeypatch.setattr(native_segment, "_steploop", None)
    model = classifier(act="relu")
    data = RNG.standard_normal([1, 1280]).astype(np.float32)
    plan = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    assert isinstance(plan.items[0], native_segment.Segment)
    close(plan.run([data])[0], model, data)
