"""LSTMCellFusion: a written-out LSTM cell (as exporters unroll torch.nn.LSTMCell) becomes one LSTMCell, the
gates told apart by their roles; anything else is left alone."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.transformations.lstm_cell_fusion import LSTMCellFusion
from vinerun.transformations.pass_infra import PassResult

RNG = np.random.default_rng(21)
B, I, H = 2, 6, 8
F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def rand(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def types(model: ov.Model) -> list[str]:
    return sorted(n.type_name for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Constant",
                                                                                        "Result"))


def written_cell(order: str = "ifco", *, split: str = "variadic", transpose_b: bool = True, biases: int = 2,
                 g_act=ops.tanh, o_act=ops.sigmoid, state_act=ops.tanh, extra=None, w_param: bool = False,
                 inputs: int = I, c_shape: tuple[int, ...] = (B, H)) -> ov.Model:
    """``torch.nn.LSTMCell`` as exporters write it, the split parts being the gates in ``order`` (f, i, c, o)."""
    x = ops.parameter([B, inputs], ov.Type.f32, name="x")
    h = ops.parameter([B, H], ov.Type.f32, name="h")
    c = ops.parameter(list(c_shape), ov.Type.f32, name="c")
    params = [x, h, c]

    def linear(v, k):
        w = rand(4 * H, k)
        if w_param:
            weight = ops.parameter([4 * H, k], ov.Type.f32)
            params.append(weight)
        else:
            weight = ops.constant(w if transpose_b else np.ascontiguousarray(w.T))
        return ops.matmul(v, weight, False, transpose_b)

    gates = ops.add(linear(x, inputs), linear(h, H))
    for _ in range(biases):
        gates = ops.add(gates, ops.constant(rand(4 * H)))
    parts = (ops.variadic_split(gates, ops.constant(np.int64(-1)), ops.constant(np.array([H] * 4, np.int64)))
             if split == "variadic" else ops.split(gates, ops.constant(np.int64(1)), 4))
    part = {g: parts.output(order.index(g)) for g in "fico"}
    f, i, o = ops.sigmoid(part["f"]), ops.sigmoid(part["i"]), o_act(part["o"])
    c_new = ops.add(ops.multiply(f, c), ops.multiply(i, g_act(part["c"])), name="c_new")
    h_new = ops.multiply(o, state_act(c_new), name="h_new")
    outputs = [h_new, c_new] + ([] if extra is None else [extra(locals())])
    return ov.Model(outputs, params)


def feeds(model: ov.Model) -> list[np.ndarray]:
    return [rand(*p.get_output_partial_shape(0).to_shape()) for p in model.get_parameters()]


@pytest.mark.parametrize("order", ["ifco", "fico", "oicf", "cofi"])
def test_the_cell_becomes_one_lstm_cell_with_the_gates_mapped(order):
    model = written_cell(order)
    args = feeds(model)
    want = run_reference(model, args)
    fused = model.clone()
    assert LSTMCellFusion()(fused).modified
    assert types(fused) == ["LSTMCell"]
    for got, w in zip(run_reference(fused, args), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    assert types(compiled.get_runtime_model()) == ["LSTMCell"]
    for got, w in zip(compiled.create_infer_request().infer(args).values(), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("split", "transpose_b", "biases"), [("split", True, 2), ("variadic", False, 1),
                                                              ("split", False, 0)])
def test_split_weight_layout_and_bias_variants(split, transpose_b, biases):
    model = written_cell("fico", split=split, transpose_b=transpose_b, biases=biases)
    args = feeds(model)
    want = run_reference(model, args)
    assert LSTMCellFusion()(model).modified and types(model) == ["LSTMCell"]
    for got, w in zip(run_reference(model, args), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_the_input_is_the_term_whose_width_is_not_the_hidden_size():
    model = written_cell(inputs=H + 3)
    assert LSTMCellFusion()(model).modified
    cell = next(n for n in model.get_ordered_ops() if n.type_name == "LSTMCell")
    assert [v.node.friendly_name for v in cell.input_values()[:3]] == ["x", "h", "c"]


def test_outputs_with_several_readers_and_their_names_stay():
    model = written_cell(extra=lambda v: ops.relu(ops.add(v["h_new"], v["c_new"])))
    args = feeds(model)
    want = run_reference(model, args)
    assert LSTMCellFusion()(model).modified
    assert types(model) == ["Add", "LSTMCell", "Relu"]
    for got, w in zip(run_reference(model, args), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", [
    {"g_act": ops.relu}, {"o_act": ops.tanh}, {"state_act": ops.sigmoid},
    {"g_act": lambda v: ops.tanh(ops.clamp(v, -1.0, 1.0))},  # a clip
    {"extra": lambda v: v["f"]}, {"extra": lambda v: v["gates"]}, {"extra": lambda v: v["parts"].output(2)},
    {"w_param": True}, {"c_shape": (1, H)},
], ids=["relu-g", "tanh-o", "sigmoid-state", "clip", "f-read", "sum-read", "part-read", "weights-param",
        "broadcast-c"])
def test_other_graphs_are_left_alone(variant):
    model = written_cell(**variant)
    before = types(model)
    assert not LSTMCellFusion()(model).modified
    assert types(model) == before


def test_roles_not_positions():
    """Swapping which sigmoid multiplies the old state swaps f and i: still an LSTM cell, mapped accordingly."""
    for order in ("".join(p) for p in itertools.permutations("fico")):
        model = written_cell(order)
        args = feeds(model)
        want = run_reference(model, args)
        assert LSTMCellFusion()(model).modified
        np.testing.assert_allclose(run_reference(model, args)[1], want[1], rtol=1e-5, atol=1e-6)


def _silero_file() -> Path | None:
    """The package's IF-less silero-vad model (in whatever environment runs the tests), or None."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "data" / "silero_vad_op18_ifless.onnx"
    return path if path.exists() else None


SILERO = _silero_file()


@pytest.mark.skipif(SILERO is None, reason="needs the silero-vad package")
def test_silero_vad_outputs_stay(monkeypatch):
    import sys

    sys.path.insert(0, str(Path(ov.__file__).parents[1] / "benchmarks"))
    from model_zoo import silero_inputs

    inputs = silero_inputs()
    fusions = []
    call = LSTMCellFusion.call
    monkeypatch.setattr(LSTMCellFusion, "call", lambda self, model: fusions.append(call(self, model)) or fusions[-1])
    fused = ov.Core().compile_model(str(SILERO), "CPU", F32).create_infer_request().infer(inputs)
    assert any(r.modified for r in fusions)  # the cells of both If branches
    monkeypatch.setattr(LSTMCellFusion, "call", lambda self, model: PassResult(model, False))
    plain = ov.Core().compile_model(str(SILERO), "CPU", F32).create_infer_request().infer(inputs)
    for a, b in zip(fused.values(), plain.values(), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
