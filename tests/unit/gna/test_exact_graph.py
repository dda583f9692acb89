"""GNA_SW_EXACT beyond chains: memory (int16 state, query/reset/set), eltwise as diagonal affine, concat
with a common scale, and the Kaldi-style speech model against GNA_SW_FP32."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import ValidationError
from vinerun.models.speech import speech_model
from vinerun.plugins.gna.compiled_model import GNACompiledModel
from vinerun.plugins.gna.exact import INT_STATE, read_state, write_state

FP32 = {"GNA_DEVICE_MODE": "GNA_SW_FP32"}
EYE = np.eye(8, dtype=np.float32)


def relu_of(x: ov.Node, name: str) -> ov.Node:
    """relu(x @ I): with s_in = 1024, s_w = 16384, 2048*s_in*s_w overflows int32 so ReLU's scale is 1024;
    inputs on the 1/1024 grid come out exactly (the PWL slope is 2**-14 = 1024 >> 24)."""
    return ops.relu(ops.matmul(x, ops.constant(EYE), False, False), name=name)


def memory_model() -> ov.Model:
    x = ops.parameter([1, 8], name="x")
    a = relu_of(x, "a")
    prev = ops.read_value(ops.constant(np.zeros((1, 8), np.float32)), "h", name="h_read")
    y = ops.add(a, prev, name="y")
    return ov.Model([y], [ops.assign(a, prev.get_variable(), name="h_write")], [x], "memory")


def frame(*values: float) -> np.ndarray:
    return np.array([values], np.float32)


def test_memory_keeps_int16_state_between_frames_by_hand() -> None:
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 1024}}
    # the Assign side has ReLU's scale 1024, so the read side (first guessed 2048) restarts with 1024
    assert GNACompiledModel(memory_model(), config).backend.state_scales == {"h": 1024.0}
    compiled = ov.Core().compile_model(memory_model(), "GNA", config)
    request = compiled.create_infer_request()
    x1 = frame(0.5, -0.5, 1.25, 3.0, -2.0, 0.0009765625, 7.5, 0.0)
    x2 = frame(0.25, 1.0, -1.0, 3.0, 2.0, 0.0, -7.5, 31.0)
    np.testing.assert_array_equal(request.infer([x1])[0], np.maximum(x1, 0))
    np.testing.assert_array_equal(request.infer([x2])[0], np.maximum(x2, 0) + np.maximum(x1, 0))
    (state,) = request.query_state()
    assert state.name == "h"
    np.testing.assert_array_equal(state.state.data, np.maximum(x2, 0))   # shown as q/s floats
    assert state.state.data.dtype == np.float32
    state.state = ov.Tensor(np.full((1, 8), 0.5, np.float32))            # set as floats, quantized on read
    np.testing.assert_array_equal(request.infer([x1])[0], np.maximum(x1, 0) + 0.5)
    request.reset_state()
    np.testing.assert_array_equal(request.infer([x2])[0], np.maximum(x2, 0))


def test_memory_state_saturates_to_int16() -> None:
    compiled = ov.Core().compile_model(memory_model(), "GNA", {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 1024}})
    request = compiled.create_infer_request()
    request.query_state()[0].state = ov.Tensor(np.full((1, 8), 100.0, np.float32))  # 102400 > 32767
    np.testing.assert_array_equal(request.infer([np.zeros((1, 8), np.float32)])[0], np.float32(32767 / 1024))


def test_state_store_keeps_int16_and_shows_floats() -> None:
    store: dict = {}
    write_state(store, "h", np.array([[2048, -1024, 32767]], np.int16), 2048.0)
    np.testing.assert_array_equal(store["h"], [[1.0, -0.5, 32767 / 2048]])
    assert store[INT_STATE]["h"][1].dtype == np.int16
    np.testing.assert_array_equal(read_state(store, "h", 2048.0, np.zeros((1, 3), np.float32)), [[2048, -1024, 32767]])
    store["h"] = np.array([[0.25, 0.0, -1.0]], np.float32)        # set_state replaced the float view
    np.testing.assert_array_equal(read_state(store, "h", 2048.0, np.zeros((1, 3), np.float32)), [[512, 0, -2048]])


def two_input_model(op: str) -> ov.Model:
    x0, x1 = ops.parameter([1, 8], name="x0"), ops.parameter([1, 8], name="x1")
    fn = {"add": ops.add, "sub": ops.subtract, "mul": ops.multiply}[op]
    return ov.Model([fn(relu_of(x0, "a"), relu_of(x1, "b"))], [x0, x1], op)


@pytest.mark.parametrize(("op", "expected"), [("add", np.add), ("sub", np.subtract), ("mul", np.multiply)])
def test_eltwise_between_activations_by_hand(op: str, expected: object) -> None:
    # both ReLUs at scale 1024: Add/Sub get diagonal weight round(1024/1024) = +-1, Mul s_out = 1024**2
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x0": 1024, "x1": 1024}}
    compiled = ov.Core().compile_model(two_input_model(op), "GNA", config)
    a = frame(0.5, 1.25, 3.0, 0.0, 2.5, 0.0009765625, 7.5, 0.75)
    b = frame(0.25, 2.0, 0.5, 1.0, -2.0, 3.0, 0.125, 0.75)
    np.testing.assert_array_equal(compiled([a, b])[0], expected(np.maximum(a, 0), np.maximum(b, 0)))


def test_add_of_two_affine_outputs_requantizes_the_bias_side() -> None:
    # the recurrent Add of Kaldi models: one 32-bit side gets an identity PWL, the other (the bias) is
    # requantized to s_a * 32767 when round(s_b / s_a) would exceed 32767
    rng = np.random.default_rng(0)
    x = ops.parameter([1, 16], name="x")
    w1, w2 = (ops.constant(rng.standard_normal((16, 16)).astype(np.float32) * 0.01) for _ in range(2))
    model = ov.Model([ops.add(ops.matmul(x, w1, False, False), ops.matmul(x, w2, False, False))], [x], "add2")
    data = rng.uniform(-1, 1, (1, 16)).astype(np.float32)
    ref = ov.Core().compile_model(model, "GNA", FP32)(data)[0]
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 16384}}
    assert any(k.startswith("affine:") for k in GNACompiledModel(model, config).backend.overrides)
    compiled = ov.Core().compile_model(model, "GNA", config)
    np.testing.assert_allclose(compiled(data)[0], ref, atol=2e-3)  # identity at ~2049: 1/2049 quanta


def test_concat_requantizes_activations_to_a_common_scale() -> None:
    x = ops.parameter([1, 8], name="x")
    sig = ops.sigmoid(ops.matmul(x, ops.constant(EYE), False, False), name="sig")   # scale 2048
    model = ov.Model([ops.concat([sig, relu_of(x, "r")], 1)], [x], "cat")           # ReLU at 1024
    data = frame(0.5, -0.5, 1.25, 3.0, -2.0, 0.25, 7.5, 0.0)
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 1024}}
    assert GNACompiledModel(model, config).backend.overrides == {"activation:r": 2048.0}  # the first input's
    compiled = ov.Core().compile_model(model, "GNA", config)
    ref = ov.Core().compile_model(model, "GNA", FP32)(data)[0]
    out = compiled(data)[0]
    np.testing.assert_array_equal(out[:, 8:], np.maximum(data, 0))   # ReLU at 2048: still exact
    np.testing.assert_allclose(out[:, :8], ref[:, :8], atol=0.011)   # PWL sigmoid within 1 %


def test_concat_of_inputs_with_different_scales_fails() -> None:
    x0, x1 = ops.parameter([1, 8], name="x0"), ops.parameter([1, 8], name="x1")
    model = ov.Model([ops.concat([x0, x1], 1)], [x0, x1], "cat")
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x0": 100, "x1": 200}}
    with pytest.raises(ValidationError, match="layers entered into concat have different scale factors"):
        ov.Core().compile_model(model, "GNA", config)
    out = ov.Core().compile_model(model, "GNA", {"GNA_SCALE_FACTOR_PER_INPUT": {"x0": 100, "x1": 100}})
    np.testing.assert_array_equal(out([frame(*[0.5] * 8), frame(*[-0.25] * 8)])[0],
                                  np.array([[0.5] * 8 + [-0.25] * 8], np.float32))


def speech_errors(features: int, precision: str, frames: int = 30) -> np.ndarray:
    model = speech_model(features=features, hidden=64, outputs=32)
    data = np.random.default_rng(1).standard_normal((frames, 1, features)).astype(np.float32)
    config = {"INFERENCE_PRECISION_HINT": precision,
              "GNA_SCALE_FACTOR_PER_INPUT": {"feats": float(16384 / np.abs(data).max())}}
    core = ov.Core()
    ref, exact = (core.compile_model(model, "GNA", c).create_infer_request() for c in (FP32, config))
    return np.concatenate([ref.infer([f])[0] - exact.infer([f])[0] for f in data])


@pytest.mark.parametrize("features", [40, 440])
@pytest.mark.parametrize("precision", ["i16", "i8"])
def test_speech_model_frame_by_frame_against_fp32(features: int, precision: str) -> None:
    e = speech_errors(features, precision)
    assert 0 < np.abs(e).mean() < 0.03          # integer, not float: some error, but small
    assert np.abs(e).max() < 0.15
    assert np.sqrt((e ** 2).mean()) < 0.04


def test_constant_subgraphs_feeding_weights_are_folded() -> None:
    x = ops.parameter([1, 8], name="x")
    w = ops.reshape(ops.convert(ops.constant(EYE.astype(np.float16)), "f32"), ops.constant(np.array([8, 8])), False)
    model = ov.Model([ops.matmul(x, w, False, False)], [x], "folded")
    data = frame(0.5, -0.5, 1.25, 3.0, -2.0, 0.25, 7.5, 0.0)
    np.testing.assert_array_equal(ov.Core().compile_model(model, "GNA", {"GNA_SCALE_FACTOR_0": 1024})(data)[0], data)
