"""LSTM in the exact path: the decomposition into GNA primitives matches the cell in float, and the
integer path with int16 state tracks GNA_SW_FP32 frame by frame."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import NotSupportedError
from vinerun.ir.interpreter import run_reference
from vinerun.models.speech import speech_model
from vinerun.plugins.gna.cells import decompose_cells
from vinerun.plugins.gna.compiled_model import GNACompiledModel
from vinerun.plugins.gna.limits import GNALimitError

RNG = np.random.default_rng(7)
W = (RNG.standard_normal((32, 12)) * 0.4).astype(np.float32)   # 4 gates x hidden 8, input 12
R = (RNG.standard_normal((32, 8)) * 0.4).astype(np.float32)
B = (RNG.standard_normal(32) * 0.2).astype(np.float32)


def cell_model(clip: float = 0.0, activations: list[str] | None = None) -> ov.Model:
    """An LSTMCell whose h and c are carried between frames by ReadValue/Assign."""
    x = ops.parameter([1, 12], name="x")
    h = ops.read_value(ops.constant(np.zeros((1, 8), np.float32)), "h", name="h_read")
    c = ops.read_value(ops.constant(np.zeros((1, 8), np.float32)), "c", name="c_read")
    cell = ops.lstm_cell(x, h, c, ops.constant(W), ops.constant(R), ops.constant(B), hidden_size=8,
                         activations=activations, clip=clip, name="lstm")
    sinks = [ops.assign(cell.output(0), h.get_variable(), name="h_write"),
             ops.assign(cell.output(1), c.get_variable(), name="c_write")]
    return ov.Model([ops.relu(cell.output(0), name="out")], sinks, [x], "lstm_cell")


def sequence_model(steps: int = 1) -> ov.Model:
    x = ops.parameter([1, steps, 12], name="x")
    h = ops.parameter([1, 1, 8], name="h")
    c = ops.parameter([1, 1, 8], name="c")
    seq = ops.lstm_sequence(x, h, c, ops.constant(np.array([steps], np.int32)), ops.constant(W[None]),
                            ops.constant(R[None]), ops.constant(B[None]), hidden_size=8, name="seq")
    return ov.Model([seq.output(0), seq.output(1), seq.output(2)], [x, h, c], "lstm_sequence")


def frames(n: int, width: int = 12) -> np.ndarray:
    return np.random.default_rng(3).standard_normal((n, 1, width)).astype(np.float32)


@pytest.mark.parametrize("clip", [0.0, 0.5])
def test_decomposed_cell_equals_the_cell_in_float(clip: float) -> None:
    model = cell_model(clip)
    decomposed = decompose_cells(model)
    assert "LSTMCell" not in {n.type_name for n in decomposed.get_ordered_ops()}
    state_a: dict = {}
    state_b: dict = {}
    for x in frames(6):
        (a,) = run_reference(model, [x], state_a)
        (b,) = run_reference(decomposed, [x], state_b)
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_decomposed_one_step_sequence_equals_the_sequence_in_float() -> None:
    model = sequence_model()
    inputs = [frames(1)[0][None], RNG.standard_normal((1, 1, 8)).astype(np.float32),
              RNG.standard_normal((1, 1, 8)).astype(np.float32)]
    for a, b in zip(run_reference(model, inputs), run_reference(decompose_cells(model), inputs), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_exact_one_step_sequence_tracks_float() -> None:
    inputs = [frames(1)[0][None], np.full((1, 1, 8), 0.3, np.float32), np.full((1, 1, 8), -0.2, np.float32)]
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 8000, "h": 8000, "c": 8000}}
    exact = ov.Core().compile_model(sequence_model(), "GNA", config).create_infer_request().infer(inputs)
    for i, want in enumerate(run_reference(sequence_model(), inputs)):
        got = np.asarray(exact[i])
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=0.02)   # measured 0.0099 (Y, Ho) and 0.0055 (Co)


def run_frames(model: ov.Model, config: dict, xs: np.ndarray) -> np.ndarray:
    request = ov.Core().compile_model(model, "GNA", config).create_infer_request()
    return np.array([request.infer([x])[0] for x in xs])


def test_exact_lstm_with_int16_state_tracks_fp32() -> None:
    xs = frames(30)
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 16384 / float(np.abs(xs[0]).max())}}
    exact = run_frames(cell_model(), config, xs)
    ref = run_frames(cell_model(), {**config, "GNA_DEVICE_MODE": "GNA_SW_FP32"}, xs)
    err = np.abs(ref - exact)
    assert 0 < err.max() < 0.05 and err.mean() < 0.01   # h in (-1, 1); measured max 0.0253, avg 0.0034
    backend = GNACompiledModel(cell_model(), config).backend
    assert set(backend.state_scales) == {"h", "c"}


def test_exact_lstm_state_is_queried_reset_and_deterministic() -> None:
    xs = frames(5)
    compiled = ov.Core().compile_model(cell_model(), "GNA", {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 4096}})
    request = compiled.create_infer_request()
    first = [request.infer([x])[0].copy() for x in xs]
    states = {s.name: s.state.data.copy() for s in request.query_state()}
    assert set(states) == {"h", "c"} and np.abs(states["c"]).max() > 0
    request.reset_state()
    again = [request.infer([x])[0] for x in xs]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_speech_model_with_lstm_exact_vs_fp32() -> None:
    model = speech_model(features=40, hidden=64, outputs=32, lstm=16)
    assert {v.get_info().variable_id for v in model.get_variables()} == {"h", "lstm_h", "lstm_c"}
    xs = np.random.default_rng(1).standard_normal((30, 1, 40)).astype(np.float32)
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"feats": 16384 / float(np.abs(xs[0]).max())}}
    ref = run_frames(model, {**config, "GNA_DEVICE_MODE": "GNA_SW_FP32"}, xs)
    for precision in ("i16", "i8"):
        err = np.abs(ref - run_frames(model, {**config, "INFERENCE_PRECISION_HINT": precision}, xs))
        assert 0 < err.max() < 0.15 and err.mean() < 0.03, precision


def test_non_default_activations_are_refused_naming_the_layer() -> None:
    with pytest.raises(NotSupportedError, match="LSTMCell 'lstm'.*activations"):
        GNACompiledModel(cell_model(activations=["tanh", "tanh", "tanh"]), {})


@pytest.mark.parametrize("target", ["GNA_TARGET_2_0", "GNA_TARGET_3_0", "GNA_TARGET_3_5"])
def test_sequence_longer_than_one_frame_is_a_limit_error(target: str) -> None:
    config = {"GNA_HW_EXECUTION_TARGET": target, "GNA_DEVICE_MODE": "GNA_SW_FP32"}
    GNACompiledModel(sequence_model(steps=1), config)                                    # just inside
    with pytest.raises(GNALimitError, match=rf"type: LSTMSequence, and sequence length\(2\) not supported "
                                            rf"\(compile target {target}: LSTMSequence runs one frame"):
        GNACompiledModel(sequence_model(steps=2), config)                                # just outside


GW = (RNG.standard_normal((24, 12)) * 0.4).astype(np.float32)   # 3 gates x hidden 8, input 12
GR = (RNG.standard_normal((24, 8)) * 0.4).astype(np.float32)


def gru_model(lbr: bool = False, clip: float = 0.0) -> ov.Model:
    """A GRUCell whose h is carried between frames by ReadValue/Assign."""
    x = ops.parameter([1, 12], name="x")
    h = ops.read_value(ops.constant(np.zeros((1, 8), np.float32)), "h", name="h_read")
    b = (np.random.default_rng(11).standard_normal(32 if lbr else 24) * 0.2).astype(np.float32)
    cell = ops.gru_cell(x, h, ops.constant(GW), ops.constant(GR), ops.constant(b), hidden_size=8,
                        linear_before_reset=lbr, clip=clip, name="gru")
    return ov.Model([ops.relu(cell, name="out")], [ops.assign(cell, h.get_variable(), name="h_write")], [x], "gru")


@pytest.mark.parametrize(("lbr", "clip"), [(False, 0.0), (True, 0.0), (False, 0.7)])
def test_decomposed_gru_equals_the_cell_in_float(lbr: bool, clip: float) -> None:
    model = gru_model(lbr, clip)
    decomposed = decompose_cells(model)
    assert "GRUCell" not in {n.type_name for n in decomposed.get_ordered_ops()}
    state_a: dict = {}
    state_b: dict = {}
    for x in frames(6):
        np.testing.assert_allclose(run_reference(decomposed, [x], state_b)[0], run_reference(model, [x], state_a)[0],
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lbr", [False, True])
def test_exact_gru_with_int16_state_tracks_fp32(lbr: bool) -> None:
    xs = frames(30)
    config = {"GNA_SCALE_FACTOR_PER_INPUT": {"x": 16384 / float(np.abs(xs[0]).max())}}
    exact = run_frames(gru_model(lbr), config, xs)
    ref = run_frames(gru_model(lbr), {**config, "GNA_DEVICE_MODE": "GNA_SW_FP32"}, xs)
    err = np.abs(ref - exact)
    assert 0 < err.max() < 0.05 and err.mean() < 0.01   # measured max 0.019 / 0.018, avg 0.0031 / 0.0033


def test_coverage_names_device_and_exact_blockers() -> None:
    from vinerun.plugins.gna.coverage import coverage

    x = ops.parameter([1, 16], name="x")
    y = ops.sqrt(ops.relu(ops.transpose(ops.reshape(x, ops.constant(np.array([4, 4])), False),
                                        ops.constant(np.array([1, 0]))), name="relu"), name="root")
    report = coverage(ov.Model([y], [x], "m"))
    assert report.device_blockers == {"Sqrt": ["root"]}
    assert list(report.exact_blockers) == ["Transpose"]
    assert not report.runs_on_device and "not a GNA layer: Sqrt x1 (root)" in report.lines()[1]
    assert coverage(cell_model()).runs_exact and coverage(gru_model()).runs_exact


def test_query_model_claims_what_the_mode_compiles() -> None:
    x = ops.parameter([1, 8], name="x")
    fc = ops.add(ops.matmul(x, ops.constant(np.eye(8, dtype=np.float32)), False, False),
                 ops.constant(np.ones((1, 8), np.float32)), name="fc_bias")
    e = ops.exp(ops.relu(fc, name="relu"), name="exp")              # a GNA layer the exact path lacks
    r = ops.reshape(e, ops.constant(np.array([2, 4])), False, name="reshape")   # next to Exp only
    model = ov.Model([ops.softmax(r, 1, name="softmax")], [x], "m")
    core = ov.Core()
    exact = core.query_model(model, "GNA")
    assert {"fc_bias", "relu"} <= set(exact) and not {"exp", "reshape", "softmax"} & set(exact)
    fp32 = core.query_model(model, "GNA", {"GNA_DEVICE_MODE": "GNA_SW_FP32"})
    assert {"fc_bias", "relu", "exp", "reshape"} <= set(fp32) and "softmax" not in fp32
    dyn = ops.parameter([-1, 8], name="d")
    assert "act" not in core.query_model(ov.Model([ops.relu(dyn, name="act")], [dyn], "dyn"), "GNA")
