"""Quantized models on the GPU (stand-in): QDQ and FakeQuantize run as element-wise device kernels around f16 (or
f32) Convolutions and MatMuls; ``ENABLE_FP16_FOR_QUANTIZED_MODELS`` picks f16 or f32 for the float layers."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.unit._quantized import fq_speech_model, qdq_conv_onnx
from vinerun.ir.interpreter import run_reference
from vinerun.plugins.gpu import backend
from vinerun.plugins.gpu.precision import F16_TOLERANCE, is_quantized

#: one quantization step flipped by a rounding (f16 inputs to a Q/FQ, or the CPU's int8 kernels) moves an output by
#: about one step times a weight: a few percent of these small models' largest output
STEP_TOLERANCE = 0.05


def models() -> list[tuple[str, ov.Model, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [("qdq_conv", ov.Core().read_model(qdq_conv_onnx()), rng.uniform(-1.5, 1.5, (1, 3, 16, 16))),
            ("fq_speech", fq_speech_model(), rng.uniform(-1.5, 1.5, (1, 16)))]


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


@pytest.mark.parametrize("index", [0, 1], ids=["qdq_conv", "fq_speech"])
def test_quantized_model_runs_in_f16_on_device_kernels(stand_in: backend.GpuDevice, index: int) -> None:
    name, model, x = models()[index]
    x = x.astype(np.float32)
    assert is_quantized(model)
    core = ov.Core()
    compiled = core.compile_model(model, "GPU", {"PERF_COUNT": True})
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == ov.Type.f16
    request = compiled.create_infer_request()
    got = request.infer([x])[0]
    reference = run_reference(model, [x], {})[0]
    cpu = core.compile_model(model, "CPU")([x])[0]
    assert relative_error(got, reference) <= F16_TOLERANCE + STEP_TOLERANCE
    assert relative_error(got, cpu) <= STEP_TOLERANCE
    ran = {(p.node_type, p.exec_type) for p in request.get_profiling_info() if str(p.status).endswith("EXECUTED")}
    kinds = {"qdq_conv": {("QuantizeLinear", "gpu_quantize_linear"), ("DequantizeLinear", "gpu_dequantize_linear"),
                          ("FusedConvolution", "cudnn_conv")},
             "fq_speech": {("FakeQuantize", "gpu_fake_quantize"), ("FusedMatMul", "cublas_gemm")}}[name]
    assert kinds <= ran, ran
    assert not any(exec_type == "host_ref" for _, exec_type in ran)


@pytest.mark.parametrize("key", ["ENABLE_FP16_FOR_QUANTIZED_MODELS", "CLDNN_ENABLE_FP16_FOR_QUANTIZED_MODELS"])
def test_fp16_for_quantized_models_off_runs_them_in_f32(stand_in: backend.GpuDevice, key: str) -> None:
    core = ov.Core()
    for _, model, x in models():
        x = x.astype(np.float32)
        compiled = core.compile_model(model, "GPU", {key: "NO"})
        assert compiled.get_property("INFERENCE_PRECISION_HINT") == ov.Type.f32
        assert compiled.get_property("ENABLE_FP16_FOR_QUANTIZED_MODELS") is False
        # f32 device kernels: the reference's quantization levels, to f32 rounding
        np.testing.assert_allclose(compiled([x])[0], run_reference(model, [x], {})[0], rtol=1e-5, atol=1e-5)


def test_fp16_for_quantized_models_leaves_float_models_alone(stand_in: backend.GpuDevice) -> None:
    model = fq_speech_model(quantized=False)
    assert not is_quantized(model)
    compiled = ov.Core().compile_model(model, "GPU", {"ENABLE_FP16_FOR_QUANTIZED_MODELS": False})
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == ov.Type.f16


def test_fp16_for_quantized_models_is_a_plugin_property(stand_in: backend.GpuDevice) -> None:
    core = ov.Core()
    assert core.get_property("GPU", "ENABLE_FP16_FOR_QUANTIZED_MODELS") is True
    core.set_property("GPU", {"CLDNN_ENABLE_FP16_FOR_QUANTIZED_MODELS": "NO"})
    assert core.get_property("GPU", "ENABLE_FP16_FOR_QUANTIZED_MODELS") is False
    _, model, _ = models()[1]
    assert core.compile_model(model, "GPU").get_property("INFERENCE_PRECISION_HINT") == ov.Type.f32


@pytest.mark.parametrize("device", ["HETERO:GPU,CPU", "MULTI:GPU,CPU", "BATCH:GPU(2)", "AUTO"])
def test_qdq_conv_net_through_the_virtual_devices(stand_in: backend.GpuDevice, device: str) -> None:
    _, model, x = models()[0]
    x = x.astype(np.float32)
    compiled = ov.Core().compile_model(model, device, {"ENABLE_STARTUP_FALLBACK": False} if device == "AUTO" else {})
    assert "GPU" in compiled.get_property("EXECUTION_DEVICES")
    assert relative_error(compiled([x])[0], run_reference(model, [x], {})[0]) <= F16_TOLERANCE + STEP_TOLERANCE
