"""OpenVINO IR with FakeQuantize, as NNCF writes it (symmetric s8 and u8 activations, per-channel s8 weights
with 255 levels, a depthwise convolution whose input is quantized per channel, a residual Add of two
quantized branches): every convolution runs on an int8 kernel, and the result is openvino's: the exact
FakeQuantize arithmetic (the NumPy reference) but for the residual branch's own rounding, which openvino's CPU
plugin drops where a convolution's quantization is followed by the sum and another quantization (a clamp to the
grid's range is left)."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.plugins.cpu.kernels._dnnl import library

openvino = pytest.importorskip("openvino")
pytestmark = pytest.mark.skipif(library() is None, reason="oneDNN binding (onednn-cpu-gomp) not installed")
OUT_HIGH = 5.871  # scales that are no simple multiples of each other (commensurable grids make halfway ties)
OUT_STEP = OUT_HIGH / 255


def _fq(x, low, high, levels: int = 256):
    low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
    return ops.fake_quantize(x, low, high, low, high, levels)


def _weights(rng: np.random.Generator, shape: tuple[int, ...]):
    w = (rng.standard_normal(shape) * 0.2).astype(np.float32)
    limit = np.abs(w).reshape(shape[0], -1).max(axis=1).reshape((-1,) + (1,) * (len(shape) - 1))
    return _fq(ops.constant(w), -limit, limit, 255)


def nncf_like_model(residual_rounding: bool = True) -> ov.Model:
    """``residual_rounding=False``: the summed branch's FakeQuantize as the clamp openvino leaves of it."""
    rng = np.random.default_rng(5)
    x = ops.parameter([1, 8, 12, 12], ov.Type.f32, name="x")
    step = 0.0213
    a = _fq(x, -128 * step, 127 * step)  # symmetric: s8
    c1 = ops.convolution(a, _weights(rng, (16, 8, 3, 3)), [1, 1], [1, 1], [1, 1], [1, 1], name="conv1")
    h = _fq(ops.relu(ops.add(c1, ops.constant(rng.standard_normal((1, 16, 1, 1)).astype(np.float32) * 0.1))), 0, 6)
    dw_in = _fq(h, np.zeros((1, 16, 1, 1), np.float32), rng.uniform(3, 6, (1, 16, 1, 1)).astype(np.float32))
    dw = ops.group_convolution(dw_in, _weights(rng, (16, 1, 1, 3, 3)), [1, 1], [1, 1], [1, 1], [1, 1], name="dw")
    h2 = _fq(ops.clamp(dw, 0.0, 6.0), 0, 6)
    pw = ops.convolution(h2, _weights(rng, (16, 16, 1, 1)), [1, 1], [0, 0], [0, 0], [1, 1], name="pw")
    branch = _fq(pw, -128 * 0.0517, 127 * 0.0517) if residual_rounding else \
        ops.clamp(pw, float(np.float32(-128 * 0.0517)), float(np.float32(127 * 0.0517)))
    shortcut = _fq(h, -128 * 0.0489, 127 * 0.0489)
    y = _fq(ops.relu(ops.add(branch, shortcut)), 0, OUT_HIGH)
    return ov.Model([y], [x], "nncf_like")


def test_fake_quantize_ir_runs_int8_and_agrees_with_openvino(tmp_path) -> None:
    path = str(tmp_path / "nncf_like.xml")
    ov.save_model(nncf_like_model(), path)
    x = np.random.default_rng(6).standard_normal((1, 8, 12, 12)).astype(np.float32)
    reference = openvino.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    expected = reference.create_infer_request().infer([x])[0]
    compiled = ov.Core().compile_model(path, "CPU", {"PERF_COUNT": True, "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    got = request.infer([x])[0]
    ov.save_model(nncf_like_model(residual_rounding=False), tmp_path / "as_openvino.xml")  # f16 constants too
    as_openvino = run_reference(ov.Core().read_model(tmp_path / "as_openvino.xml"), [x])[0]
    steps = np.abs(got - as_openvino) / OUT_STEP
    assert np.mean(steps < 0.5) >= 0.99 and steps.max() <= 1.5  # a float tie may still go the other way
    assert np.mean(np.abs(got - expected) / OUT_STEP < 0.5) >= 0.99
    exact = run_reference(ov.Core().read_model(path), [x])[0]
    assert np.mean(np.abs(got - exact) / OUT_STEP > 0.5) > 0.05  # the dropped rounding shows
    assert np.mean(np.abs(expected - exact) / OUT_STEP > 0.5) > 0.05  # in openvino's too
    convs = {p.node_name: p.exec_type for p in request.get_profiling_info()
             if p.status == p.Status.EXECUTED and "Convolution" in p.node_type}
    assert len(convs) == 3 and all(t.endswith("_int8") for t in convs.values()), convs
