"""Quantized models on the CPU: QDQ convolutions and MatMuls run on oneDNN's int8 kernels (profile exec types
end in ``_int8``), agree with onnxruntime (the oracle) within a quantization step, and what cannot run in int8
runs in f32, correctly, and says so in the profile."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import vinerun as ov
from tests.unit.low_precision._qdq import (
    QdqGraph,
    attention_block,
    depthwise_cnn,
    mlp_block,
    per_channel_activation,
    projection_block,
    residual_cnn,
)
from vinerun.errors import VinerunError
from vinerun.plugins.cpu.kernels._dnnl import library

ort = pytest.importorskip("onnxruntime")
needs_dnnl = pytest.mark.skipif(library() is None, reason="oneDNN binding (onednn-cpu-gomp) not installed")


def _run(model: onnx.ModelProto, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """(vinerun's output, onnxruntime's, vinerun's profile)."""
    data = model.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    config = {"PERF_COUNT": True, "INFERENCE_PRECISION_HINT": "f32"}
    compiled = ov.Core().compile_model(ov.Core().read_model(data), "CPU", config)
    request = compiled.create_infer_request()
    got = request.infer([x])[0]
    return got, expected, request.get_profiling_info()


def _exec_types(profile: list, *names: str) -> dict[str, str]:
    """Exec types by ONNX node name (a convolution with a bias is ``<node>/WithoutBiases``, as openvino names it)."""
    return {name: p.exec_type for p in profile if (name := p.node_name.removesuffix("/WithoutBiases")) in names
            and p.status == p.Status.EXECUTED}


@needs_dnnl
def test_residual_cnn_runs_int8_and_matches_onnxruntime() -> None:
    x = np.random.default_rng(0).standard_normal((1, 8, 16, 16)).astype(np.float32)
    got, expected, profile = _run(residual_cnn(), x)
    step = 0.01  # the output's quantization step
    assert np.abs(got - expected).max() <= 2 * step + 1e-6
    assert np.mean(np.abs(got - expected) < 1e-6) > 0.9
    types = _exec_types(profile, "conv1", "conv2", "fc")
    assert set(types) == {"conv1", "conv2", "fc"}
    assert all(t.endswith("_int8") for t in types.values()), types
    assert types["conv2"].startswith("onednn_conv2d_sum[")  # the residual Add runs inside it
    assert {p.node_type for p in profile if p.status == p.Status.EXECUTED} >= {"MaxPool"}
    maxpool = next(p for p in profile if p.node_type == "MaxPool")
    assert maxpool.exec_type.startswith("onednn_maxpool[")  # on the integers: its Q/DQ pair moved away


@needs_dnnl
@pytest.mark.parametrize("main_first", [True, False])
def test_a_residual_add_of_two_quantized_convolutions_gives_openvinos_result(main_first: bool, tmp_path) -> None:
    """As openvino's CPU plugin does: the convolution at the Add's input 0 takes the sum whichever branch comes
    first, and its own requantization before the sum skips the rounding (a clamp stays)."""
    openvino = pytest.importorskip("openvino")
    model = projection_block(main_first)
    onnx.save(model, tmp_path / "block.onnx")
    x = np.random.default_rng(8).standard_normal((1, 8, 12, 12)).astype(np.float32)
    got, exact, profile = _run(model, x)  # exact: onnxruntime's QDQ arithmetic
    f32 = {"INFERENCE_PRECISION_HINT": "f32"}
    expected = openvino.Core().compile_model(tmp_path / "block.onnx", "CPU", f32)([x])[0]
    step = 0.029
    assert np.mean(np.abs(got - expected) < step / 2) >= 0.99 and np.abs(got - expected).max() <= step * 1.01
    types = _exec_types(profile, "main2", "shortcut")
    assert types["main2"].startswith("onednn_conv2d_sum[") and not types["shortcut"].startswith(
        "onednn_conv2d_sum["), types
    assert np.mean(np.abs(got - exact) > step / 2) > 0.01  # the dropped rounding shows


@needs_dnnl
def test_depthwise_with_signed_activations() -> None:
    x = np.random.default_rng(1).standard_normal((1, 8, 12, 12)).astype(np.float32)
    got, expected, profile = _run(depthwise_cnn(), x)
    assert np.abs(got - expected).max() <= 2 * 0.02 + 1e-6
    types = _exec_types(profile, "dw", "pw")
    assert all(t.endswith("_int8") for t in types.values()) and len(types) == 2, types


def test_per_channel_activations_run_in_f32_and_the_profile_says_so() -> None:
    x = np.abs(np.random.default_rng(2).standard_normal((1, 4, 8, 8))).astype(np.float32)
    got, expected, profile = _run(per_channel_activation(), x)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    conv = next(p for p in profile if "Convolution" in p.node_type and p.status == p.Status.EXECUTED)
    assert conv.node_type != "QuantizedConvolution" and not conv.exec_type.endswith("_int8")
    assert any(p.node_type == "DequantizeLinear" and p.status == p.Status.EXECUTED for p in profile)


def _bad_model(scale: np.ndarray, zero_point: np.ndarray) -> onnx.ModelProto:
    g = QdqGraph()
    s, z = g.const(scale, "s"), g.const(zero_point, "z")
    q = g.node("QuantizeLinear", ["x", s, z], name="quantize_x", axis=1)
    return g.model({"x": [1, 4, 8, 8]}, g.conv(g.node("DequantizeLinear", [q, s, z], axis=1), 4, 4))


@pytest.mark.parametrize(("scale", "zero_point", "message"), [
    (np.float32([0.1, 0.1, 0.1]), np.zeros(3, np.uint8), "has 3 values but axis 1"),
    (np.float32([0.1, 0.1, 0.1, 0.1]), np.zeros(2, np.uint8), "zero point's shape"),
    (np.float32(0.0), np.uint8(0), "finite and non-zero"),
])
def test_malformed_quantization_fails_to_compile_naming_the_node(scale, zero_point, message) -> None:
    core = ov.Core()
    with pytest.raises(VinerunError, match=message) as info:
        core.compile_model(core.read_model(_bad_model(scale, zero_point).SerializeToString()), "CPU")
    assert "quantize_x" in str(info.value) or "QuantizeLinear" in str(info.value)


def test_zero_point_of_another_type_than_the_data_is_an_error() -> None:
    g = QdqGraph()
    q = g.node("QuantizeLinear", ["x", g.const(np.float32(0.1)), g.const(np.uint8(3))])
    y = g.node("DequantizeLinear", [q, g.const(np.float32(0.1)), g.const(np.int8(3))], name="bad_dq")
    model = g.model({"x": [2, 3]}, y)
    with pytest.raises(VinerunError, match="bad_dq.*zero point is i8 but the quantized data is u8"):
        ov.Core().read_model(model.SerializeToString())


@needs_dnnl
def test_attention_matmuls_of_two_int8_tensors_run_int8() -> None:
    x = np.random.default_rng(3).standard_normal((1, 16, 32)).astype(np.float32)
    got, expected, profile = _run(attention_block(), x)
    assert np.abs(got - expected).max() <= 2 * 0.05 + 1e-6
    types = _exec_types(profile, "q", "k", "v", "scores", "context")
    assert len(types) == 5 and all(t.endswith("_int8") for t in types.values()), types
    executed = {p.node_type for p in profile if p.status == p.Status.EXECUTED}
    # no DequantizeLinear runs: the scores' closing Q/DQ pair is a rounding post-op of their int8 matmul
    assert executed == {"QuantizeLinear", "QuantizedMatMul", "Transpose", "Softmax"}, executed


@needs_dnnl
def test_a_gelu_between_two_int8_matmuls_is_the_first_ones_post_op() -> None:
    x = np.random.default_rng(5).standard_normal((1, 16, 32)).astype(np.float32)
    got, expected, profile = _run(mlp_block(), x)
    assert np.abs(got - expected).max() <= 2 * 0.05 + 1e-6
    assert np.mean(np.abs(got - expected) < 1e-6) > 0.9
    types = _exec_types(profile, "fc1", "fc2")
    assert len(types) == 2 and all(t.endswith("_int8") for t in types.values()), types
    executed = {p.node_type for p in profile if p.status == p.Status.EXECUTED}
    # the bias, the GELU and the closing quantization ran inside fc1: it writes the u8 that fc2 reads
    assert executed == {"QuantizeLinear", "QuantizedMatMul"}, executed


def test_a_quantization_pair_on_f32_values_is_one_rounding_pass() -> None:
    g = QdqGraph(4)
    gate = g.qdq(g.node("Sigmoid", ["x"]), 1 / 255, 0)
    model = g.model({"x": [2, 64, 32]}, g.node("Mul", [gate, "x"]))
    x = np.random.default_rng(4).standard_normal((2, 64, 32)).astype(np.float32)
    got, expected, profile = _run(model, x)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    kernels = {p.node_type: p.exec_type for p in profile if p.status == p.Status.EXECUTED}
    assert kernels.get("FakeQuantize") == "onednn_fake_quantize" and "DequantizeLinear" not in kernels, kernels


@needs_dnnl
def test_qoperator_qlinearconv_runs_on_the_int8_kernel() -> None:
    g = QdqGraph(5)
    rng = g.rng
    xs, xz = g.const(np.float32(0.02), "xs"), g.const(np.uint8(128), "xz")
    ys, yz = g.const(np.float32(0.05), "ys"), g.const(np.uint8(100), "yz")
    w = g.const(rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8), "w")
    ws, wz = g.const((rng.random(6) * 0.01 + 0.002).astype(np.float32), "ws"), g.const(np.zeros(6, np.int8), "wz")
    bias = g.const(rng.integers(-500, 500, 6).astype(np.int32), "b")
    q = g.node("QuantizeLinear", ["x", xs, xz])
    y = g.node("QLinearConv", [q, xs, xz, w, ws, wz, ys, yz, bias], name="qconv", pads=[1, 1, 1, 1])
    model = g.model({"x": [1, 4, 10, 10]}, g.node("DequantizeLinear", [y, ys, yz]))
    x = np.random.default_rng(5).standard_normal((1, 4, 10, 10)).astype(np.float32)
    got, expected, profile = _run(model, x)
    assert np.abs(got - expected).max() <= 0.05 + 1e-6
    assert any(p.node_type == "QuantizedConvolution" and p.exec_type.startswith("onednn_conv2d[")
               and p.exec_type.endswith("_int8") for p in profile)


_AVX2_SCRIPT = """
import numpy as np, onnxruntime as ort, vinerun as ov
from tests.unit.low_precision._qdq import residual_cnn
model = residual_cnn().SerializeToString()
x = np.random.default_rng(0).standard_normal((1, 8, 16, 16)).astype(np.float32)
compiled = ov.Core().compile_model(ov.Core().read_model(model), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
got = compiled.create_infer_request().infer([x])[0]
expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
impls = sorted({getattr(s.kernel, "impl", "") for s in compiled._impl.plan.steps if "Quantized" in s.node.type_name})
print(float(np.abs(got - expected).max()), impls)
"""


@needs_dnnl
def test_a_cpu_without_vnni_runs_int8_on_avx2_kernels() -> None:
    """oneDNN capped at AVX2 (no VNNI, no AVX-512: ``ONEDNN_MAX_CPU_ISA``) still runs the int8 layers, correctly."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2"}
    out = subprocess.run([sys.executable, "-c", _AVX2_SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))))
    assert out.returncode == 0, out.stderr[-2000:]
    diff, impls = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert float(diff) <= 0.02 + 1e-6
    assert "avx2" in impls and "avx512" not in impls and "vnni" not in impls, impls


@pytest.mark.parametrize("make", [residual_cnn, attention_block])
def test_exported_then_imported_int8_model_gives_identical_results(make) -> None:
    import io

    core = ov.Core()
    compiled = core.compile_model(core.read_model(make().SerializeToString()), "CPU")
    shape = [d.get_length() for d in compiled.inputs[0].get_partial_shape()]
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    blob = io.BytesIO()
    compiled.export_model(blob)
    imported = core.import_model(io.BytesIO(blob.getvalue()), "CPU")
    np.testing.assert_array_equal(imported.create_infer_request().infer([x])[0],
                                  compiled.create_infer_request().infer([x])[0])


def test_runtime_weights_of_an_int8_matmul_are_written_signed() -> None:
    """oneDNN's int8 matmul takes s8 weights: the K projection (u8 in the file) writes s8 with its zero point
    moved by 128, the Transpose carries it, and the scores' matmul reads it with no conversion."""
    from vinerun.transformations import common_cleanup
    from vinerun.transformations.low_precision import low_precision

    model = ov.Core().read_model(attention_block().SerializeToString())
    common_cleanup(keep_decompression=True)(model)
    low_precision()(model)
    nodes = {n.friendly_name: n for n in model.get_ordered_ops()}
    scores, k = nodes["scores"], nodes["k"]
    assert scores.layer.runtime_weights and scores.get_input_element_type(1) == ov.Type.i8
    assert k.get_output_element_type(0) == ov.Type.i8 and k.layer.output.zero_point == 0  # 128 - 128
    assert nodes["q"].get_output_element_type(0) == ov.Type.u8  # the data side stays as it was


@needs_dnnl
def test_int8_models_run_their_native_segments_without_python_fallbacks(monkeypatch) -> None:
    """A segment whose planned layouts do not fit what a run brings falls back to per-step Python on each call
    (correct, but 2x slower on an int8 BERT when a FakeQuantize declared its constant limit in another shape)."""
    from vinerun.plugins.cpu import native_segment

    fallbacks: list[str] = []
    python = native_segment.Segment._python
    monkeypatch.setattr(native_segment.Segment, "_python",
                        lambda self, inputs: fallbacks.append(self.node.type_name) or python(self, inputs))
    g = QdqGraph(6)
    gate = g.qdq(g.node("Sigmoid", ["x"]), 1 / 255, 0)
    scaled = g.qdq(g.node("Mul", [gate, "x"]), 0.03, 128)
    model = g.model({"x": [1, 16, 8, 8]}, g.node("Relu", [g.conv(scaled, 16, 16, name="conv")]))
    compiled = ov.Core().compile_model(ov.Core().read_model(model.SerializeToString()), "CPU")
    request = compiled.create_infer_request()
    for _ in range(2):
        request.infer([np.random.default_rng(8).standard_normal((1, 16, 8, 8)).astype(np.float32)])
    assert not fallbacks


@needs_dnnl
def test_quantize_takes_a_layout_other_than_planned_on_onednn(monkeypatch):
    """An input that arrives in another layout than the one planned (a head-split attention tensor guessed
    channels-last) gets a reorder of its own, not the PyTorch path, and the same values."""
    from onnx import TensorProto, helper

    from vinerun.plugins.cpu.kernels import quantize

    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 8])
    y_info = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4, 6, 8])
    scale = helper.make_tensor("s", TensorProto.FLOAT, [], [0.02])
    zero = helper.make_tensor("z", TensorProto.UINT8, [], [128])
    graph = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")], "q",
                              [x_info], [y_info], [scale, zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    compiled = ov.Core().compile_model(ov.Core().read_model(model.SerializeToString()), "CPU")
    (step,) = [s for s in compiled._impl.plan.steps if s.node.type_name == "QuantizeLinear"]
    x = np.random.default_rng(0).standard_normal((1, 4, 6, 8)).astype(np.float32)
    want = step.kernel.fn([x])[0]

    def no_pytorch(*args):
        raise AssertionError("took the PyTorch path")

    monkeypatch.setattr(quantize, "_torch_quantize", no_pytorch)
    strided = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels-last, same values
    np.testing.assert_array_equal(step.kernel.fn([strided])[0], want)
    assert step.kernel.native([(strided.shape, strided.strides, strided.dtype)]) is not None  # also in a segment
