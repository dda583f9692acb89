"""Quantized models on GNA_SW_EXACT: scale factors from FakeQuantize statistics (input, weights, between layers),
ONNX QDQ pairs read as FakeQuantize, and a model NNCF quantized."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from tests.unit._quantized import fq_speech_model, qdq_speech_onnx
from vinerun import opset13 as ops
from vinerun.errors import NotSupportedError
from vinerun.plugins.gna.compiled_model import GNACompiledModel

EXACT = {"GNA_DEVICE_MODE": "GNA_SW_EXACT"}


def frames(n: int = 60, features: int = 16, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.8, 1.8, (1, features)).astype(np.float32) for _ in range(n)]


def max_error(a: ov.CompiledModel, b: ov.CompiledModel, xs: list[np.ndarray]) -> float:
    return max(float(np.max(np.abs(a([x])[0] - b([x])[0]))) for x in xs)


def test_fq_model_takes_its_scale_factors_from_fake_quantize() -> None:
    core = ov.Core()
    model = fq_speech_model()
    compiled = GNACompiledModel(model, EXACT)
    exact = compiled.exact()
    assert exact.input_keys[0][1] == pytest.approx(255 / 4.0)  # (levels-1)/(high-low) of x/fq_output_0
    scales = exact.weight_scales
    assert {k: (v[1], v[2].split(" ")[0]) for k, v in scales.items()} == {
        "fc1": ("i8", "decompression"), "fc2": ("i8", "FakeQuantize"), "fc3": ("i8", "decompression")}
    # 255 levels: i8 weights, s_w = 230 * 254 / (the largest channel span)
    fq_w = next(n for n in model.get_ordered_ops() if n.friendly_name == "fc2/fq_weights_1")
    span = 2 * float(np.max(fq_w.input_value(4).node.get_value()))
    assert scales["fc2"][0] == pytest.approx(230 * 254 / span)

    xs = frames()
    reference = core.compile_model(model, "CPU")
    gna = core.compile_model(model, "GNA", EXACT)
    float_net = core.compile_model(fq_speech_model(quantized=False), "CPU")
    fq_error = max_error(reference, float_net, xs)  # what quantization itself costs
    gna_error = max_error(gna, reference, xs)
    assert gna_error <= 3 * fq_error, (gna_error, fq_error)
    # the f32 network on GNA with the default scale factor (1.0: inputs rounded to integers) is far off
    default = core.compile_model(fq_speech_model(quantized=False), "GNA", EXACT)
    assert max_error(default, float_net, xs) > 4 * gna_error


def test_input_fake_quantize_overrides_the_user_scale_factor(caplog: pytest.LogCaptureFixture) -> None:
    core = ov.Core()
    model = fq_speech_model()
    xs = frames(8)
    plain = core.compile_model(model, "GNA", EXACT)
    with caplog.at_level(logging.WARNING, logger="vinerun"):
        user = core.compile_model(model, "GNA", {**EXACT, "GNA_SCALE_FACTOR_PER_INPUT": {"x": 5000.0}})
    assert "uses the scale factor 63.75 of FakeQuantize 'x/fq_output_0' instead of the given 5000" in caplog.text
    for x in xs:
        np.testing.assert_array_equal(user([x])[0], plain([x])[0])


@pytest.mark.parametrize("precision", ["i16", "i8"])
def test_qdq_onnx_model_runs_on_gna_with_scales_from_q_dq(precision: str) -> None:
    core = ov.Core()
    model = core.read_model(qdq_speech_onnx())
    compiled = GNACompiledModel(model, {**EXACT, "INFERENCE_PRECISION_HINT": precision})
    exact = compiled.exact()
    assert exact.input_keys[0][1] == pytest.approx(255 / 4.0, rel=1e-6)  # 1 / the QuantizeLinear's scale
    assert {v[1] for v in exact.weight_scales.values()} == {"i8"}  # int8 weights in -127..127: 255 levels
    assert all(v[2].startswith("DequantizeLinear") for v in exact.weight_scales.values())
    reference = core.compile_model(model, "CPU")
    gna = core.compile_model(model, "GNA", {**EXACT, "INFERENCE_PRECISION_HINT": precision})
    # one step of the hidden Q/DQ (1/255) through fc2, plus the input's half step: well under 0.05
    assert max_error(gna, reference, frames()) < 0.05


def test_per_channel_activation_fake_quantize_is_refused_naming_it() -> None:
    x = ops.parameter([1, 8], name="x")
    h = ops.matmul(x, ops.constant(np.eye(8, dtype=np.float32)), False, False, name="fc")
    lo, hi = ops.constant(-np.arange(1, 9, dtype=np.float32)), ops.constant(np.arange(1, 9, dtype=np.float32))
    y = ops.fake_quantize(h, lo, hi, lo, hi, 256, name="per_channel_fq")
    compiled = GNACompiledModel(ov.Model([y], [x], "pc"), {"GNA_DEVICE_MODE": "GNA_SW_FP32"})
    with pytest.raises(NotSupportedError, match="per-channel FakeQuantize 'per_channel_fq'"):
        compiled.exact()


def test_exported_fq_model_imports_bit_identical() -> None:
    core = ov.Core()
    compiled = core.compile_model(fq_speech_model(), "GNA", EXACT)
    imported = ov.Core().import_model(compiled.export_model(), "GNA")
    for x in frames(6):
        np.testing.assert_array_equal(imported([x])[0], compiled([x])[0])


def test_nncf_quantized_speech_model_on_gna(tmp_path: Path) -> None:
    """A speech-like network quantized by NNCF (openvino backend), saved as IR, read and run by vinerun."""
    nncf = pytest.importorskip("nncf")
    openvino = pytest.importorskip("openvino")
    opsov = openvino.opset13
    rng = np.random.default_rng(0)
    x = opsov.parameter([1, 16], np.float32, name="x")
    h = opsov.matmul(x, opsov.constant((rng.standard_normal((16, 32)) * 0.3).astype(np.float32)), False, False)
    h = opsov.sigmoid(opsov.add(h, opsov.constant((rng.standard_normal(32) * 0.1).astype(np.float32))))
    h = opsov.matmul(h, opsov.constant((rng.standard_normal((32, 32)) * 0.3).astype(np.float32)), False, False)
    h = opsov.tanh(h)
    y = opsov.matmul(h, opsov.constant((rng.standard_normal((32, 8)) * 0.3).astype(np.float32)), False, False)
    data = [rng.uniform(-1.8, 1.8, (1, 16)).astype(np.float32) for _ in range(64)]
    quantized = nncf.quantize(openvino.Model([y], [x], "speech"), nncf.Dataset(data), subset_size=64)
    openvino.save_model(quantized, str(tmp_path / "q.xml"), compress_to_fp16=False)

    core = ov.Core()
    model = core.read_model(tmp_path / "q.xml")
    assert "FakeQuantize" in {n.type_name for n in model.get_ordered_ops()}
    fq_input = next(n for n in model.get_ordered_ops() if n.type_name == "FakeQuantize"
                    and n.input_value(0).node.type_name == "Parameter")
    lo, hi = (float(fq_input.input_value(i).node.get_value()) for i in (1, 2))
    exact = GNACompiledModel(model, EXACT).exact()
    assert exact.input_keys[0][1] == pytest.approx(255 / (hi - lo))
    assert all(v[1] == "i8" for v in exact.weight_scales.values()) and len(exact.weight_scales) == 3

    xs = frames(40, seed=3)
    reference = core.compile_model(model, "CPU")
    gna = core.compile_model(model, "GNA", EXACT)
    out_range = max(float(np.max(np.abs(reference([v])[0]))) for v in xs)
    assert max_error(gna, reference, xs) < 0.05 * out_range
