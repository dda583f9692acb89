"""OpenVINO IR with FakeQuantize, as NNCF writes it (symmetric s8 and u8 activations, per-channel s8 weights
with 255 levels, a depthwise convolution whose input is quantized per channel, a residual Add of two
quantized branches): every convolution runs on an int8 kernel, and the result is openvino's: the exact
FakeQuantize arithmetic (the NumPy reference) but for the residual branch's own rounding, which openvino's CPU
plugin drops where a convolution's quantization is followed by the sum and another quantization (a clamp to the
grid's range is left). Down to the float rounding: int8 ResNet blocks give openvino's numbers bit for bit."""

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
    assert np.array_equal(got, expected)  # openvino's arithmetic (see the test below)
    exact = run_reference(ov.Core().read_model(path), [x])[0]
    assert np.mean(np.abs(got - exact) / OUT_STEP > 0.5) > 0.05  # the dropped rounding shows
    assert np.mean(np.abs(expected - exact) / OUT_STEP > 0.5) > 0.05  # in openvino's too
    convs = {p.node_name: p.exec_type for p in request.get_profiling_info()
             if p.status == p.Status.EXECUTED and "Convolution" in p.node_type}
    assert len(convs) == 3 and all(t.endswith("_int8") for t in convs.values()), convs


def _conv(rng: np.random.Generator, x, cin: int, cout: int, k: int):
    """A convolution with NNCF's weight quantization and a bias."""
    c = ops.convolution(x, _weights(rng, (cout, cin, k, k)), [1, 1], [k // 2] * 2, [k // 2] * 2, [1, 1])
    return ops.add(c, ops.constant((rng.standard_normal((1, cout, 1, 1)) * 0.1).astype(np.float32)))


def resnet_blocks(size: int = 96) -> ov.Model:
    """A ResNet's int8 blocks as NNCF quantizes them: a convolution with ReLU, a projection block (two quantized
    branches summed), an identity block (the sum reads the block's input, which another convolution reads
    first), and an f32 head, with scales that are no multiples of each other."""
    rng = np.random.default_rng(3)

    def signed(v):
        step = rng.uniform(0.01, 0.05)
        return _fq(v, -128 * step, 127 * step)

    def unsigned(v):
        return _fq(ops.relu(v), 0, 255 * rng.uniform(0.01, 0.05))

    x = ops.parameter([1, 16, size, size], ov.Type.f32, name="x")
    a = signed(x)
    h = unsigned(_conv(rng, a, 16, 32, 3))
    p = unsigned(ops.add(signed(_conv(rng, h, 32, 32, 1)), signed(_conv(rng, a, 16, 32, 1))))
    q = unsigned(ops.add(signed(_conv(rng, unsigned(_conv(rng, p, 32, 32, 1)), 32, 32, 1)), p))
    return ov.Model([_conv(rng, q, 32, 8, 1)], [x], "resnet_blocks")


def test_int8_resnet_blocks_give_openvinos_numbers_bit_for_bit(tmp_path) -> None:
    """openvino's arithmetic op for op (a destination scale for the closing quantization; a residual sum in the
    residual's integers, the convolution's clamp and rescale merged into one linear op): float ties, ~1 in 10^6
    elements per layer, then round the same way, and the error does not grow from layer to layer."""
    path = str(tmp_path / "blocks.xml")
    ov.save_model(resnet_blocks(), path)
    reference = openvino.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    compiled = ov.Core().compile_model(path, "CPU")
    for seed in range(4):
        x = np.random.default_rng(seed).standard_normal((1, 16, 96, 96)).astype(np.float32)
        expected, got = reference.create_infer_request().infer([x])[0], compiled.create_infer_request().infer([x])[0]
        assert np.array_equal(got, expected), f"input {seed}: {np.sum(got != expected)} of {got.size} differ"


def test_a_convolution_summing_its_own_input_keeps_its_rounding_as_openvino(tmp_path) -> None:
    """openvino does not fuse a sum that reads the convolution's own input (in place it would overwrite it): the
    convolution's quantization keeps its rounding there, and so it does here, with the sum fused all the same
    (dropping it moved ~11% of the outputs by a step). The separate sum's own float ties remain."""
    rng = np.random.default_rng(4)
    x = ops.parameter([1, 16, 64, 64], ov.Type.f32, name="x")
    h = _fq(ops.relu(_conv(rng, _fq(x, -128 * 0.021, 127 * 0.021), 16, 32, 3)), 0, 255 * 0.037)
    q = _fq(ops.relu(ops.add(_fq(_conv(rng, h, 32, 32, 1), -128 * 0.029, 127 * 0.029), h)), 0, 255 * 0.043)
    path = str(tmp_path / "own_input.xml")
    ov.save_model(ov.Model([_conv(rng, q, 32, 8, 1)], [x], "own_input"), path)
    x_value = np.random.default_rng(0).standard_normal((1, 16, 64, 64)).astype(np.float32)
    expected = openvino.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})([x_value])[0]
    request = ov.Core().compile_model(path, "CPU", {"PERF_COUNT": True}).create_infer_request()
    got = request.infer([x_value])[0]
    assert np.mean(got != expected) < 1e-3
    assert any(p.exec_type.startswith("onednn_conv2d_sum[") for p in request.get_profiling_info())
