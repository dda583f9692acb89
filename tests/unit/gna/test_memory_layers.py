"""Kaldi-style memory layers in GNA_SW_EXACT: a ReadValue whose value goes through an affine layer (and maybe an
activation, or a splice with the input) into the Assign of the same variable. The variable's scale is chosen
once and the Assign side is requantized into it, so these compile, stream within the error bands of the other
exact models, and repeat bit for bit after reset_state."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import ValidationError
from vinerun.models.speech import MEMORY_LAYERS, memory_layer_model
from vinerun.plugins.gna.compiled_model import GNACompiledModel

FP32 = {"GNA_DEVICE_MODE": "GNA_SW_FP32"}
FRAMES = np.random.default_rng(1).standard_normal((160, 1, 40)).astype(np.float32)
SF = float(16384 / np.abs(FRAMES).max())   # the speech sample's input scale factor
# the bands test_exact_graph.py holds the Kaldi speech model to (exact against fp32, over all scores)
MAX_ERROR, AVG_ERROR, RMS_ERROR = 0.15, 0.03, 0.04


def exact_config(precision: str = "i16") -> dict:
    return {"GNA_SCALE_FACTOR_PER_INPUT": {"feats": SF}, "INFERENCE_PRECISION_HINT": precision}


def stream(compiled: ov.CompiledModel, frames: np.ndarray, request: ov.InferRequest | None = None) -> np.ndarray:
    request = request or compiled.create_infer_request()
    return np.concatenate([np.asarray(request.infer([f])[0]) for f in frames])


@pytest.mark.parametrize("precision", ["i16", "i8"])
@pytest.mark.parametrize("kind", MEMORY_LAYERS)
def test_memory_layer_streams_within_the_bands_of_fp32(kind: str, precision: str) -> None:
    model = memory_layer_model(kind)
    core = ov.Core()
    fp32 = stream(core.compile_model(model, "GNA", FP32), FRAMES)
    cpu = stream(core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}), FRAMES)
    np.testing.assert_allclose(fp32, cpu, rtol=1e-5, atol=1e-5)     # the reference is the CPU's result
    exact = stream(core.compile_model(model, "GNA", exact_config(precision)), FRAMES)
    e = fp32 - exact
    assert 0 < np.abs(e).mean() < AVG_ERROR
    assert np.abs(e).max() < MAX_ERROR
    assert np.sqrt((e ** 2).mean()) < RMS_ERROR
    # the error does not grow with the frames: the state is requantized each frame, not drifting
    assert np.abs(e[-40:]).max() < MAX_ERROR / 2


@pytest.mark.parametrize("kind", MEMORY_LAYERS)
def test_reset_state_repeats_the_first_frames_bit_for_bit(kind: str) -> None:
    compiled = ov.Core().compile_model(memory_layer_model(kind), "GNA", exact_config())
    request = compiled.create_infer_request()
    first = stream(compiled, FRAMES[:30], request)
    stream(compiled, FRAMES[30:60], request)
    assert np.abs(request.query_state()[0].state.data).max() > 0
    request.reset_state()
    np.testing.assert_array_equal(request.query_state()[0].state.data, np.zeros((1, 32), np.float32))
    np.testing.assert_array_equal(stream(compiled, FRAMES[:30], request), first)
    np.testing.assert_array_equal(stream(compiled, FRAMES[:30]), first)   # a new request too


@pytest.mark.parametrize(("kind", "scale"), [("affine", 2049.0), ("affine_tanh", 2048.0), ("affine_relu", 1024.0),
                                             ("concat", SF), ("concat_sigmoid", SF), ("projection", 1024.5)])
def test_the_state_scale_is_chosen_once_and_the_assign_side_follows(kind: str, scale: float) -> None:
    backend = GNACompiledModel(memory_layer_model(kind), exact_config()).exact()
    assert backend.state_scales["m"] == pytest.approx(scale, rel=1e-6)
    if kind == "concat":
        # the splice gives the memory the input's scale; the identity PWL after the affine (which wanted
        # 2049) is requantized into it rather than moving the memory again
        (identity,) = [k for k in backend.overrides if k.startswith("identity:")]
        assert backend.overrides == {"memory:m": pytest.approx(SF), identity: pytest.approx(SF)}
    # an imported model starts from the settled requantizations: one pass, same tables
    again = type(backend)(backend.model, backend.config, backend.overrides)
    assert again.passes == 1 and again.fingerprint() == backend.fingerprint()


def relu_memory(max_weight: float) -> ov.Model:
    """m' = relu(m W + x): with max|W| = 20 the ReLU's output scale would flip between 2048 and 1024 (halved
    when 2048 * s_in overflows int32, and s_in follows the memory's scale)."""
    w = np.random.default_rng(0).standard_normal((16, 16))
    w *= max_weight / np.abs(w).max()
    x = ops.parameter([1, 16], name="x")
    m = ops.read_value(ops.constant(np.zeros((1, 16), np.float32)), "m", name="m_read")
    new = ops.relu(ops.add(ops.matmul(m, ops.constant(w.astype(np.float32)), False, False),
                           ops.matmul(x, ops.constant(np.eye(16, dtype=np.float32)), False, False)), name="act")
    return ov.Model([new], [ops.assign(new, m.get_variable(), name="m_write")], [x], "relu_memory")


def test_an_activation_whose_scale_follows_the_memory_settles() -> None:
    backend = GNACompiledModel(relu_memory(20.0), {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 2048.0}}).exact()
    # the memory took ReLU's first scale (1024); ReLU, which then wanted 2048, is requantized back to 1024
    assert backend.state_scales == {"m": 1024.0}
    assert backend.overrides == {"memory:m": 1024.0, "activation:act": 1024.0}


def test_a_state_that_cannot_be_requantized_is_named() -> None:
    # the splice fixes the memory at x0's scale; the Assign writes input x1 (another scale): no activation
    # between them could be requantized
    x0, x1 = ops.parameter([1, 8], name="x0"), ops.parameter([1, 8], name="x1")
    m = ops.read_value(ops.constant(np.zeros((1, 8), np.float32)), "m", name="m_read")
    y = ops.matmul(ops.concat([x0, m], 1), ops.constant(np.ones((16, 8), np.float32)), False, False)
    model = ov.Model([y], [ops.assign(x1, m.get_variable(), name="m_write")], [x0, x1], "bad")
    with pytest.raises(ValidationError, match=r"GNA memory 'm': Assign 'm_write' writes a value of scale 200 "
                                              r"\(input:x1\) into a state of scale 100"):
        ov.Core().compile_model(model, "GNA", {"GNA_SCALE_FACTOR_PER_INPUT": {"x0": 100.0, "x1": 200.0}})


def test_unknown_memory_layer_kind() -> None:
    with pytest.raises(ValidationError, match="kind must be one of affine"):
        memory_layer_model("lstm")
