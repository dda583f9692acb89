"""Recurrent ops: OpenVINO sequences/cells against openvino, ONNX ops on hand-checked cases, CPU kernels."""

from __future__ import annotations

import numpy as np
import pytest

from vinerun.ir.core_ops import Parameter
from vinerun.ir.types import Type
from vinerun.ops.rnn import GRUSequence, LSTMSequence, RNNSequence
from vinerun.ops.rnn_cells import GRUCell, LSTMCell, RNNCell
from vinerun.ops.rnn_onnx import OnnxGRU, OnnxLSTM, OnnxRNN

rng = np.random.default_rng(0)


def _params(*arrays: np.ndarray | None) -> list[Parameter | None]:
    return [None if a is None else Parameter(Type(a.dtype), list(a.shape)) for a in arrays]


def _rand(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _openvino_run(build, arrays: list[np.ndarray]) -> list[np.ndarray]:
    ov = pytest.importorskip("openvino")
    ops = pytest.importorskip("openvino.opset13")
    params = [ops.parameter(list(a.shape), a.dtype) for a in arrays]
    node = build(ops, params)
    model = ov.Model(node.outputs(), params)
    res = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(arrays)
    return [res[i] for i in range(len(model.outputs))]


# --- shape inference ---------------------------------------------------------------------------
def test_lstm_sequence_shapes():
    b, s, i, h = 2, 5, 3, 4
    node = LSTMSequence(*_params(_rand(b, s, i), _rand(b, 2, h), _rand(b, 2, h), np.full(b, s, np.int32),
                                 _rand(2, 4 * h, i), _rand(2, 4 * h, h), _rand(2, 4 * h)),
                        hidden_size=h, direction="bidirectional")
    assert [list(o.get_shape()) for o in node.outputs()] == [[b, 2, s, h], [b, 2, h], [b, 2, h]]


def test_onnx_lstm_shapes_layouts():
    x = Parameter(Type.f32, [5, 2, 3])
    w, r = Parameter(Type.f32, [1, 16, 3]), Parameter(Type.f32, [1, 16, 4])
    node = OnnxLSTM(x, w, r, hidden_size=4)
    assert [list(o.get_shape()) for o in node.outputs()] == [[5, 1, 2, 4], [1, 2, 4], [1, 2, 4]]
    node = OnnxLSTM(x, w, r, hidden_size=4, layout=1)
    assert [list(o.get_shape()) for o in node.outputs()] == [[5, 2, 1, 4], [5, 1, 4], [5, 1, 4]]


# --- hand-checked ONNX cases -----------------------------------------------------------------------
def test_onnx_rnn_scalar_case():
    # hidden 1, input 1: h1 = tanh(0.5*1 + 0) ; h2 = tanh(0.5*2 + 2*h1 + 0.1 + 0.2)
    x = np.array([[[1.0]], [[2.0]]], np.float32)
    W, R = np.array([[[0.5]]], np.float32), np.array([[[2.0]]], np.float32)
    B = np.array([[0.1, 0.2]], np.float32)
    node = OnnxRNN(*_params(x, W, R, B), hidden_size=1)
    y, yh = node.evaluate([x, W, R, B])
    h1 = np.tanh(0.5 + 0.3)
    h2 = np.tanh(1.0 + 2 * h1 + 0.3)
    np.testing.assert_allclose(y.reshape(-1), [h1, h2], rtol=1e-6)
    np.testing.assert_allclose(yh.reshape(-1), [h2], rtol=1e-6)


def test_onnx_lstm_sequence_lens_zero_pads():
    x = _rand(3, 2, 2)
    W, R = _rand(1, 8, 2), _rand(1, 8, 2)
    lens = np.array([3, 1], np.int32)
    node = OnnxLSTM(*_params(x, W, R), None, Parameter(Type.i32, [2]), hidden_size=2)
    y, yh, yc = node.evaluate([x, W, R, None, lens])
    assert np.all(y[1:, 0, 1] == 0)
    np.testing.assert_allclose(yh[0, 1], y[0, 0, 1])
    full, _, _ = node.evaluate([x, W, R, None, np.array([3, 3], np.int32)])
    np.testing.assert_allclose(y[:, :, 0], full[:, :, 0])


def test_onnx_lstm_matches_lstm_sequence():
    # ONNX (iofc, [seq, batch, ...]) and OpenVINO (fico, [batch, seq, ...]) layouts of the same LSTM.
    s, b, i, h = 4, 2, 3, 5
    x, W, R, Bonnx = _rand(s, b, i), _rand(2, 4 * h, i), _rand(2, 4 * h, h), _rand(2, 8 * h)
    onnx_out = OnnxLSTM(*_params(x, W, R, Bonnx), hidden_size=h, direction="bidirectional").evaluate(
        [x, W, R, Bonnx])

    def reorder(a: np.ndarray) -> np.ndarray:
        i_, o_, f_, c_ = np.split(a, 4, axis=1)
        return np.concatenate([f_, i_, c_, o_], axis=1)

    Bov = reorder(Bonnx[:, :4 * h] + Bonnx[:, 4 * h:])
    args = [x.transpose(1, 0, 2).copy(), np.zeros((b, 2, h), np.float32), np.zeros((b, 2, h), np.float32),
            np.full(b, s, np.int32), reorder(W), reorder(R), Bov]
    y, ho, co = LSTMSequence(*_params(*args), hidden_size=h, direction="bidirectional").evaluate(args)
    np.testing.assert_allclose(onnx_out[0], y.transpose(2, 1, 0, 3), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(onnx_out[1], ho.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(onnx_out[2], co.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


def test_onnx_gru_linear_before_reset_differs():
    x, W, R = _rand(3, 1, 2), _rand(1, 9, 2), _rand(1, 9, 3)
    B = _rand(1, 18)
    a = OnnxGRU(*_params(x, W, R, B), hidden_size=3).evaluate([x, W, R, B])[1]
    b = OnnxGRU(*_params(x, W, R, B), hidden_size=3, linear_before_reset=1).evaluate([x, W, R, B])[1]
    assert not np.allclose(a, b)


# --- OpenVINO ops against openvino ---------------------------------------------------------------
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_sequence_vs_openvino(direction):
    b, s, i, h = 3, 4, 5, 6
    nd = 2 if direction == "bidirectional" else 1
    args = [_rand(b, s, i), _rand(b, nd, h), _rand(b, nd, h), np.array([4, 2, 3], np.int32),
            _rand(nd, 4 * h, i), _rand(nd, 4 * h, h), _rand(nd, 4 * h)]
    ours = LSTMSequence(*_params(*args), hidden_size=h, direction=direction, clip=2.0).evaluate(args)
    theirs = _openvino_run(lambda o, p: o.lstm_sequence(*p, hidden_size=h, direction=direction, clip=2.0), args)
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("lbr", [False, True])
def test_gru_sequence_vs_openvino(lbr):
    b, s, i, h = 2, 4, 3, 5
    args = [_rand(b, s, i), _rand(b, 2, h), np.array([4, 3], np.int32), _rand(2, 3 * h, i), _rand(2, 3 * h, h),
            _rand(2, (4 if lbr else 3) * h)]
    ours = GRUSequence(*_params(*args), hidden_size=h, direction="bidirectional",
                       linear_before_reset=lbr).evaluate(args)
    theirs = _openvino_run(lambda o, p: o.gru_sequence(*p, hidden_size=h, direction="bidirectional",
                                                       linear_before_reset=lbr), args)
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-5)


def test_rnn_sequence_vs_openvino():
    b, s, i, h = 2, 3, 3, 4
    args = [_rand(b, s, i), _rand(b, 1, h), np.array([3, 2], np.int32), _rand(1, h, i), _rand(1, h, h), _rand(1, h)]
    ours = RNNSequence(*_params(*args), hidden_size=h, direction="reverse", activations=["relu"]).evaluate(args)
    theirs = _openvino_run(lambda o, p: o.rnn_sequence(*p, hidden_size=h, direction="reverse",
                                                       activations=["relu"]), args)
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-5)


def test_cells_vs_openvino():
    b, i, h = 2, 3, 4
    x, hh, c = _rand(b, i), _rand(b, h), _rand(b, h)
    args = [x, hh, c, _rand(4 * h, i), _rand(4 * h, h), _rand(4 * h)]
    ours = LSTMCell(*_params(*args), hidden_size=h).evaluate(args)
    theirs = _openvino_run(lambda o, p: o.lstm_cell(*p, hidden_size=h), args)
    for a, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-5)
    args = [x, hh, _rand(3 * h, i), _rand(3 * h, h), _rand(4 * h)]
    ours = GRUCell(*_params(*args), hidden_size=h, linear_before_reset=True).evaluate(args)
    theirs = _openvino_run(lambda o, p: o.gru_cell(*p, hidden_size=h, linear_before_reset=True), args)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)
    args = [x, hh, _rand(h, i), _rand(h, h), _rand(h)]
    ours = RNNCell(*_params(*args), hidden_size=h).evaluate(args)
    theirs = _openvino_run(lambda o, p: o.rnn_cell(*p, h, ["tanh"], [], []), args)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-4, atol=1e-5)


# --- CPU kernels against the reference -----------------------------------------------------------
def _kernel_matches(node, args, rtol: float, atol: float, want: str) -> None:
    from vinerun.plugins.cpu.kernels import select_kernel

    kernel = select_kernel(node)
    assert kernel.exec_type == want
    for a, r in zip(kernel.fn(args), node.evaluate(args), strict=True):
        assert a.dtype == r.dtype and a.shape == r.shape
        np.testing.assert_allclose(a, r, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_sequence_kernel(dtype, direction):
    b, s, i, h = 2, 5, 3, 4
    nd = 2 if direction == "bidirectional" else 1
    args = [a.astype(dtype) for a in (_rand(b, s, i), _rand(b, nd, h), _rand(b, nd, h))]
    args += [np.full(b, s, np.int32)]
    args += [a.astype(dtype) for a in (_rand(nd, 4 * h, i), _rand(nd, 4 * h, h), _rand(nd, 4 * h))]
    node = LSTMSequence(*_params(*args), hidden_size=h, direction=direction)
    _kernel_matches(node, args, 1e-5, 1e-6, "aten_lstm")
    args[3] = np.array([5, 2], np.int32)  # partial lengths: falls back to the reference inside the kernel
    _kernel_matches(node, args, 1e-5, 1e-6, "aten_lstm")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gru_rnn_sequence_kernels(dtype):
    b, s, i, h = 2, 4, 3, 5
    args = [a.astype(dtype) for a in (_rand(b, s, i), _rand(b, 2, h))] + [np.full(b, s, np.int64)]
    args += [a.astype(dtype) for a in (_rand(2, 3 * h, i), _rand(2, 3 * h, h), _rand(2, 4 * h))]
    node = GRUSequence(*_params(*args), hidden_size=h, direction="bidirectional", linear_before_reset=True)
    _kernel_matches(node, args, 1e-5, 1e-6, "aten_gru")
    args = [a.astype(dtype) for a in (_rand(b, s, i), _rand(b, 1, h))] + [np.full(b, s, np.int64)]
    args += [a.astype(dtype) for a in (_rand(1, h, i), _rand(1, h, h), _rand(1, h))]
    node = RNNSequence(*_params(*args), hidden_size=h, direction="reverse", activations=["relu"])
    _kernel_matches(node, args, 1e-5, 1e-6, "aten_rnn")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", [0, 1])
def test_onnx_recurrent_kernels(dtype, layout):
    s, b, i, h = 4, 3, 2, 3
    x = (_rand(s, b, i) if layout == 0 else _rand(b, s, i)).astype(dtype)
    state = (_rand(2, b, h) if layout == 0 else _rand(b, 2, h)).astype(dtype)
    for cls, g, extra, want in ((OnnxLSTM, 4, {}, "aten_lstm"), (OnnxGRU, 3, {"linear_before_reset": 1}, "aten_gru"),
                                (OnnxRNN, 1, {}, "aten_rnn")):
        W, R, B = (a.astype(dtype) for a in (_rand(2, g * h, i), _rand(2, g * h, h), _rand(2, 2 * g * h)))
        lens = np.array([4, 2, 1], np.int32)
        args = [x, W, R, B, lens, state] + ([state] if cls is OnnxLSTM else [])
        node = cls(*_params(*args), hidden_size=h, direction="bidirectional", layout=layout, **extra)
        _kernel_matches(node, args, 1e-5, 1e-6, want)
        args[4] = None
        node = cls(*_params(*args), hidden_size=h, direction="bidirectional", layout=layout, **extra)
        _kernel_matches(node, args, 1e-5, 1e-6, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_gru_reset_before_kernel(dtype, direction):
    nd = 2 if direction == "bidirectional" else 1
    args = [a.astype(dtype) for a in (_rand(2, 4, 3), _rand(2, nd, 5))] + [np.full(2, 4, np.int32)]
    args += [a.astype(dtype) for a in (_rand(nd, 15, 3), _rand(nd, 15, 5), _rand(nd, 15))]
    node = GRUSequence(*_params(*args), hidden_size=5, direction=direction)
    _kernel_matches(node, args, 1e-5, 1e-6, "aten_gru_loop")
    args[2] = np.array([3, 0], np.int32)  # a short entry and an empty one
    _kernel_matches(node, args, 1e-5, 1e-6, "aten_gru_loop")


def test_clipped_lstm_uses_reference():
    from vinerun.plugins.cpu.kernels import select_kernel

    args = [_rand(2, 3, 2), _rand(2, 1, 3), _rand(2, 1, 3), np.full(2, 3, np.int32), _rand(1, 12, 2),
            _rand(1, 12, 3), _rand(1, 12)]
    assert select_kernel(LSTMSequence(*_params(*args), hidden_size=3, clip=1.0)).exec_type == "ref"


# --- ONNX translation onto the opset5 sequences, and IR interop --------------------------------
def _onnx_recurrent_model(op: str, gates: int, const_weights: bool, **attrs):
    from onnx import TensorProto, helper, numpy_helper

    s, b, i, h = 4, 2, 3, 5
    nd = 2 if attrs.get("direction") == "bidirectional" else 1
    weights = {"W": _rand(nd, gates * h, i), "R": _rand(nd, gates * h, h), "B": _rand(nd, 2 * gates * h)}
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [s, b, i])]
    inits = []
    for name, arr in weights.items():
        if const_weights:
            inits.append(numpy_helper.from_array(arr, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(arr.shape)))
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, ["X", "W", "R", "B"], outs, hidden_size=h, **attrs)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                                    for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    feed = {"X": _rand(s, b, i)} | ({} if const_weights else weights)
    return model, feed


@pytest.mark.parametrize("op,gates,attrs", [
    ("LSTM", 4, {"direction": "bidirectional"}),
    ("GRU", 3, {"direction": "reverse", "linear_before_reset": 1}),
    ("GRU", 3, {}),
    ("RNN", 1, {"activations": ["Relu"]}),
])
@pytest.mark.parametrize("const_weights", [True, False])
def test_onnx_translation_to_sequence_ops(op, gates, attrs, const_weights, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    import vinerun as ov

    model, feed = _onnx_recurrent_model(op, gates, const_weights, **attrs)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)
    vmodel = ov.Core().read_model(model.SerializeToString())
    assert f"{op}Sequence" in {n.type_name for n in vmodel.get_ordered_ops()}
    got = ov.Core().compile_model(vmodel, "CPU")(list(feed.values()))
    for k, w in enumerate(want):
        np.testing.assert_allclose(got[k], w, rtol=1e-4, atol=1e-5)
    if const_weights:  # the IR vinerun writes runs in openvino
        openvino = pytest.importorskip("openvino")
        ov.serialize(vmodel, tmp_path / "m.xml")
        core = openvino.Core()
        res = core.compile_model(core.read_model(tmp_path / "m.xml"), "CPU",
                                 {"INFERENCE_PRECISION_HINT": "f32"})([feed["X"]])
        for k, w in enumerate(want):
            np.testing.assert_allclose(res[k], w, rtol=1e-4, atol=1e-5)


def test_onnx_lstm_with_peepholes_keeps_onnx_semantics():
    from onnx import TensorProto, helper

    import vinerun as ov

    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("X", "W", "R", "B", "", "", "", "P")
              if n]
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "", "", "P"], ["Y"], hidden_size=2)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    types = {n.type_name for n in ov.Core().read_model(model.SerializeToString()).get_ordered_ops()}
    assert "LSTM" in types and "LSTMSequence" not in types
