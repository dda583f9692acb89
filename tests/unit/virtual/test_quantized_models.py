"""Quantized models (ONNX QDQ, FakeQuantize) pass through the virtual devices: AUTO, MULTI, BATCH, HETERO (the GPU
cases run on the stand-in in tests/unit/plugins_gpu/test_gpu_quantized.py)."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.unit._quantized import fq_speech_model, qdq_conv_onnx, qdq_speech_onnx
from vinerun.ir.interpreter import run_reference

#: a quantization step flipped by a rounding (the CPU's int8 kernels against the reference) moves an output by
#: a few percent of these small models' largest output
STEP_TOLERANCE = 0.05


def close(got: np.ndarray, want: np.ndarray) -> None:
    assert np.max(np.abs(got - want)) <= STEP_TOLERANCE * np.max(np.abs(want)), np.max(np.abs(got - want))


@pytest.fixture(scope="module")
def conv() -> tuple[ov.Model, np.ndarray, np.ndarray]:
    model = ov.Core().read_model(qdq_conv_onnx())
    x = np.random.default_rng(0).uniform(-1.5, 1.5, (1, 3, 16, 16)).astype(np.float32)
    return model, x, run_reference(model, [x], {})[0]


@pytest.mark.parametrize("device", ["AUTO", "AUTO:CPU", "MULTI:CPU", "HETERO:CPU", "BATCH:CPU(4)"])
def test_qdq_conv_net_passes_through(conv: tuple[ov.Model, np.ndarray, np.ndarray], device: str) -> None:
    model, x, want = conv
    compiled = ov.Core().compile_model(model, device)
    assert "CPU" in compiled.get_property("EXECUTION_DEVICES")
    close(compiled([x])[0], want)


def test_batch_device_batches_a_qdq_model_through_a_queue(conv: tuple[ov.Model, np.ndarray, np.ndarray]) -> None:
    model, _, _ = conv
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1.5, 1.5, (1, 3, 16, 16)).astype(np.float32) for _ in range(6)]
    compiled = ov.Core().compile_model(model, "BATCH:CPU(3)")
    out: list = [None] * len(xs)
    queue = ov.AsyncInferQueue(compiled, 3)
    queue.set_callback(lambda request, i: out.__setitem__(i, request.get_output_tensor(0).data.copy()))
    for i, x in enumerate(xs):
        queue.start_async({"x": x}, i)
    queue.wait_all()
    for x, got in zip(xs, out, strict=True):
        close(got, run_reference(model, [x], {})[0])


@pytest.mark.parametrize("device", ["HETERO:GNA,CPU", "AUTO:GNA,CPU"])
def test_qdq_speech_model_runs_on_gna_through_the_virtual_devices(device: str) -> None:
    """GNA takes the whole QDQ speech model (its Q/DQ pairs read as FakeQuantize: scales from them)."""
    model = ov.Core().read_model(qdq_speech_onnx())
    x = np.random.default_rng(0).uniform(-1.5, 1.5, (1, 16)).astype(np.float32)
    compiled = ov.Core().compile_model(model, device)
    if device.startswith("AUTO"):  # the CPU start-up helper serves ("(CPU)") until GNA has compiled
        assert compiled._impl.wait_for_target(30)
    assert compiled.get_property("EXECUTION_DEVICES") == ["GNA"]
    assert np.max(np.abs(compiled([x])[0] - run_reference(model, [x], {})[0])) < 0.05


def test_fq_model_on_multi_gna_cpu() -> None:
    model = fq_speech_model()
    x = np.random.default_rng(0).uniform(-1.5, 1.5, (1, 16)).astype(np.float32)
    compiled = ov.Core().compile_model(model, "MULTI:GNA,CPU")
    want = run_reference(model, [x], {})[0]
    for _ in range(3):  # requests go to both devices
        assert np.max(np.abs(compiled([x])[0] - want)) < 0.1
