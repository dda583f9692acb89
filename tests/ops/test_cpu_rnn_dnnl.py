"""The CPU GRU and LSTM kernels on oneDNN's RNN primitives (constant f32 weights) against the NumPy reference:
OpenVINO's GRUSequence / LSTMSequence and ONNX's GRU / LSTM, both GRU flavours (``linear_before_reset`` or not),
every direction, several sequence lengths and batches, both ONNX layouts, partial sequence lengths, concurrent
callers, and a compiled model."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ops.rnn import GRUSequence, LSTMSequence
from vinerun.ops.rnn_onnx import OnnxGRU, OnnxLSTM
from vinerun.plugins.cpu import device_info
from vinerun.plugins.cpu.kernels import lstm_steps, select_kernel
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels.rnn_dnnl import LSTM_MIN

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(3)
DIRECTIONS = ["forward", "reverse", "bidirectional"]


def rand(*shape: int, scale: float = 0.5) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def weights(nd: int, hidden: int, inputs: int, bias: int) -> list[np.ndarray]:
    """W, R, B scaled as torch initializes them (1 / sqrt(hidden)): larger recurrent weights make the recurrence
    chaotic, and any two f32 summation orders part after a few dozen steps."""
    k = hidden ** -0.5
    return [rand(nd, 3 * hidden, inputs, scale=k), rand(nd, 3 * hidden, hidden, scale=k), rand(nd, bias, scale=k)]


def check(node, args: list, rtol: float = 1e-5, atol: float = 2e-6) -> None:
    kernel = select_kernel(node)
    assert kernel.exec_type == "onednn_gru"
    for got, want in zip(kernel.fn(args), node.evaluate(args), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def ov_gru(batch: int, seq: int, inputs: int, hidden: int, direction: str, lbr: bool) -> tuple[GRUSequence, list]:
    """A GRUSequence with constant weights and a call's arguments (batch-major X and state)."""
    nd = 2 if direction == "bidirectional" else 1
    w, r, b = weights(nd, hidden, inputs, (4 if lbr else 3) * hidden)
    args = [rand(batch, seq, inputs), rand(batch, nd, hidden), np.full(batch, seq, np.int32), w, r, b]
    node = GRUSequence(Parameter("f32", [-1, -1, inputs]), Parameter("f32", [-1, nd, hidden]),
                       Parameter("i32", [-1]), *(Constant(a) for a in (w, r, b)), hidden_size=hidden,
                       direction=direction, linear_before_reset=lbr)
    return node, args


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("lbr", [True, False])
@pytest.mark.parametrize(("batch", "seq", "inputs", "hidden"), [(1, 1, 3, 5), (2, 7, 4, 6), (3, 33, 257, 128),
                                                                  (20, 5, 16, 128)])  # batch x hidden >= SMALL
def test_gru_sequence_matches_the_reference(direction, lbr, batch, seq, inputs, hidden):
    node, args = ov_gru(batch, seq, inputs, hidden, direction, lbr)
    check(node, args)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_one_kernel_many_shapes_and_partial_lengths(direction):
    """A dynamic kernel meets new sequence lengths and batches (a primitive per shape); partial lengths run one call
    per distinct length, an empty entry keeps its initial state."""
    node, args = ov_gru(2, 5, 4, 3, direction, lbr=False)
    for batch, seq in ((2, 5), (1, 9), (4, 2), (2, 5)):
        args[:3] = [rand(batch, seq, 4), rand(batch, args[1].shape[1], 3), np.full(batch, seq, np.int32)]
        check(node, args)
    args[:3] = [rand(3, 6, 4), rand(3, args[1].shape[1], 3), np.array([6, 2, 0], np.int32)]
    check(node, args)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("lbr", [0, 1])
def test_onnx_gru_matches_the_reference(direction, layout, lbr):
    seq, batch, inputs, hidden = 6, 3, 5, 4
    nd = 2 if direction == "bidirectional" else 1
    x = rand(seq, batch, inputs) if layout == 0 else rand(batch, seq, inputs)
    state = rand(nd, batch, hidden) if layout == 0 else rand(batch, nd, hidden)
    w, r, b = weights(nd, hidden, inputs, 6 * hidden)
    x_shape = [-1, -1, inputs]
    s_shape = [nd, -1, hidden] if layout == 0 else [-1, nd, hidden]
    for bias in (b, None):
        consts = [Constant(w), Constant(r)] + ([Constant(bias)] if bias is not None else [None])
        node = OnnxGRU(Parameter("f32", x_shape), *consts, None, Parameter("f32", s_shape), hidden_size=hidden,
                       direction=direction, layout=layout, linear_before_reset=lbr)
        check(node, [x, w, r, bias, None, state])


def test_concurrent_callers():
    node, args = ov_gru(2, 12, 8, 16, "bidirectional", lbr=True)
    kernel = select_kernel(node)
    want = node.evaluate(args)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: kernel.fn(args), range(16)))
    for got in results:
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=2e-6)


def test_what_stays_on_aten():
    """Weights given at run time, f64, and a clip keep their old kernels."""
    node, args = ov_gru(2, 4, 3, 5, "forward", lbr=True)
    params = [Parameter("f32", list(a.shape)) for a in args[3:]]
    assert select_kernel(GRUSequence(*node.input_values()[:3], *params, hidden_size=5,
                                     linear_before_reset=True)).exec_type == "aten_gru"
    args64 = [a.astype(np.float64) if a.dtype == np.float32 else a for a in args]
    node64 = GRUSequence(Parameter("f64", [-1, -1, 3]), Parameter("f64", [-1, 1, 5]), Parameter("i32", [-1]),
                         *(Constant(a) for a in args64[3:]), hidden_size=5, linear_before_reset=True)
    assert select_kernel(node64).exec_type == "aten_gru"
    clipped = GRUSequence(*node.input_values(), hidden_size=5, linear_before_reset=True, clip=1.0)
    assert select_kernel(clipped).exec_type == "ref"


@pytest.mark.parametrize("lbr", [True, False])
def test_compiled_model_matches_the_reference(lbr):
    node, args = ov_gru(1, 20, 10, 8, "bidirectional", lbr)
    params = [p.node for p in node.input_values()[:3]]
    model = Model([node.output(0), node.output(1)], params)
    feeds = args[:3]
    want = run_reference(model, feeds)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(feeds)
    assert {s.node.type_name: s.kernel.exec_type for s in compiled._impl.plan.steps}["GRUSequence"] == "onednn_gru"
    for i, w in enumerate(want):
        np.testing.assert_allclose(got[i], w, rtol=1e-5, atol=2e-6)


# ---- LSTM (oneDNN's LSTM from hidden LSTM_MIN on) ----------------------------------------------------------------
def lstm_weights(nd: int, hidden: int, inputs: int) -> list[np.ndarray]:
    k = hidden ** -0.5
    return [rand(nd, 4 * hidden, inputs, scale=k), rand(nd, 4 * hidden, hidden, scale=k), rand(nd, 8 * hidden, scale=k)]


def check_lstm(node, args: list) -> None:
    kernel = select_kernel(node)
    assert kernel.exec_type == "onednn_lstm"
    for got, want in zip(kernel.fn(args), node.evaluate(args), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("layout", [0, 1])
def test_onnx_lstm_matches_the_reference(direction, layout):
    """ONNX's LSTM (gates i, o, f, c; two biases) with initial states, both layouts, every direction."""
    seq, batch, inputs, hidden = 5, 2, 24, LSTM_MIN
    nd = 2 if direction == "bidirectional" else 1
    x = rand(seq, batch, inputs) if layout == 0 else rand(batch, seq, inputs)
    h0, c0 = (rand(nd, batch, hidden) if layout == 0 else rand(batch, nd, hidden) for _ in range(2))
    w, r, b = lstm_weights(nd, hidden, inputs)
    s_shape = [nd, -1, hidden] if layout == 0 else [-1, nd, hidden]
    node = OnnxLSTM(Parameter("f32", [-1, -1, inputs]), Constant(w), Constant(r), Constant(b), None,
                    Parameter("f32", s_shape), Parameter("f32", s_shape), hidden_size=hidden, direction=direction,
                    layout=layout)
    check_lstm(node, [x, w, r, b, None, h0, c0])


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_lstm_sequence_matches_the_reference_with_partial_lengths(direction):
    """OpenVINO's LSTMSequence (gates f, i, c, o; batch-major), new shapes per call and partial lengths."""
    inputs, hidden = 16, LSTM_MIN
    nd = 2 if direction == "bidirectional" else 1
    w, r, b = lstm_weights(nd, hidden, inputs)
    b = b[:, :4 * hidden]
    node = LSTMSequence(Parameter("f32", [-1, -1, inputs]), Parameter("f32", [-1, nd, hidden]),
                        Parameter("f32", [-1, nd, hidden]), Parameter("i32", [-1]),
                        *(Constant(a) for a in (w, r, b)), hidden_size=hidden, direction=direction)
    for batch, seq, lens in ((1, 7, None), (3, 4, None), (3, 6, [6, 2, 0])):
        lengths = np.full(batch, seq, np.int32) if lens is None else np.array(lens, np.int32)
        check_lstm(node, [rand(batch, seq, inputs), rand(batch, nd, hidden), rand(batch, nd, hidden), lengths,
                          w, r, b])


def test_small_lstms_stay_on_aten():
    """Below LSTM_MIN ATen's LSTM is as fast (the profile says which ran)."""
    w, r, b = lstm_weights(1, 32, 8)
    node = OnnxLSTM(Parameter("f32", [-1, -1, 8]), Constant(w), Constant(r), Constant(b), hidden_size=32)
    assert select_kernel(node).exec_type == "aten_lstm"


def _lstm_model(hidden: int, inputs: int = 32) -> tuple[Model, list[np.ndarray]]:
    """x [seq, 1, inputs] -> bidirectional ONNX LSTM (constant weights) -> Y."""
    w, r, b = lstm_weights(2, hidden, inputs)
    x = Parameter("f32", [-1, 1, inputs])
    node = OnnxLSTM(x, Constant(w), Constant(r), Constant(b), hidden_size=hidden, direction="bidirectional")
    return Model([node.output(0)], [x]), [rand(9, 1, inputs)]


def _lstm_exec_types(compiled, feeds: list[np.ndarray]) -> list[str]:
    request = compiled.create_infer_request()
    request.infer(feeds)
    return [p.exec_type for p in request.profiling_info if p.node_type == "LSTM"]


@pytest.mark.skipif(not device_info.has_native_bf16(),
                    reason="no native bf16 on this CPU (AMX / AVX512-BF16): models compile in f32")
def test_bf16_hint_runs_onednn_bf16_lstm():
    """Under a bf16 hint a large LSTM is a bf16 anchor (oneDNN's bf16 LSTM, weights converted once; openvino's
    choice too) and stays within the bf16 tolerance of the f32 reference; a small one stays f32 (here, batch 1: the
    C step loop)."""
    from vinerun.plugins.cpu.precision import BF16_TOLERANCE

    model, feeds = _lstm_model(LSTM_MIN)
    want = run_reference(model, feeds)[0]
    bf16 = {"INFERENCE_PRECISION_HINT": "bf16", "PERF_COUNT": True}
    compiled = ov.Core().compile_model(model, "CPU", bf16)
    assert _lstm_exec_types(compiled, feeds) == ["onednn_lstm_bf16"]
    got = compiled.create_infer_request().infer(feeds)[0]
    assert got.dtype == np.float32 and np.abs(got - want).max() <= BF16_TOLERANCE * np.abs(want).max()

    small, small_feeds = _lstm_model(32)
    assert _lstm_exec_types(ov.Core().compile_model(small, "CPU", bf16), small_feeds) == ["gemv_lstm"]


# ---- LSTM at batch 1 on the C step loop (csrc/lstm.c) -----------------------------------------------------------
needs_c = pytest.mark.skipif(not lstm_steps.available(), reason="the CPU plugin's C kernels are not built")


@needs_c
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("hidden", [3, 17, 64, 300])  # below, at and past whole vectors and panels
def test_batch1_lstm_on_the_c_steps_matches_the_reference(direction, layout, hidden):
    seq, inputs = 6, 5
    nd = 2 if direction == "bidirectional" else 1
    x = rand(seq, 1, inputs) if layout == 0 else rand(1, seq, inputs)
    h0, c0 = (rand(nd, 1, hidden) if layout == 0 else rand(1, nd, hidden) for _ in range(2))
    w, r, b = lstm_weights(nd, hidden, inputs)
    x_shape = [-1, 1, inputs] if layout == 0 else [1, -1, inputs]
    s_shape = [nd, 1, hidden] if layout == 0 else [1, nd, hidden]
    node = OnnxLSTM(Parameter("f32", x_shape), Constant(w), Constant(r), Constant(b), None,
                    Parameter("f32", s_shape), Parameter("f32", s_shape), hidden_size=hidden, direction=direction,
                    layout=layout)
    kernel = select_kernel(node)
    assert kernel.exec_type == "gemv_lstm"
    args = [x, w, r, b, None, h0, c0]
    for got, want in zip(kernel.fn(args), node.evaluate(args), strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@needs_c
def test_batch1_lstm_sequence_with_a_shorter_length_and_a_dynamic_batch():
    """OpenVINO's LSTMSequence (gates f, i, c, o) at batch 1, a sequence length shorter than X (the rest of Y is
    zero, the state is the last real step's); a batch the model leaves open keeps oneDNN / ATen."""
    inputs, hidden, nd = 4, 20, 2
    w, r, b = lstm_weights(nd, hidden, inputs)
    b = b[:, :4 * hidden]
    consts = [Constant(a) for a in (w, r, b)]
    node = LSTMSequence(Parameter("f32", [1, -1, inputs]), Parameter("f32", [1, nd, hidden]),
                        Parameter("f32", [1, nd, hidden]), Parameter("i32", [1]), *consts, hidden_size=hidden,
                        direction="bidirectional")
    kernel = select_kernel(node)
    assert kernel.exec_type == "gemv_lstm"
    args = [rand(1, 7, inputs), rand(1, nd, hidden), rand(1, nd, hidden), np.array([4], np.int32), w, r, b]
    for got, want in zip(kernel.fn(args), node.evaluate(args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    dynamic = LSTMSequence(Parameter("f32", [-1, -1, inputs]), Parameter("f32", [-1, nd, hidden]),
                           Parameter("f32", [-1, nd, hidden]), Parameter("i32", [-1]), *consts, hidden_size=hidden,
                           direction="bidirectional")
    assert select_kernel(dynamic).exec_type == "aten_lstm"


@needs_c
def test_batch1_lstm_concurrent_callers():
    """Each call has its own state and scratch: threads calling one kernel get the reference's answer."""
    w, r, b = lstm_weights(2, 64, 8)
    node = OnnxLSTM(Parameter("f32", [-1, 1, 8]), Constant(w), Constant(r), Constant(b), hidden_size=64,
                    direction="bidirectional")
    kernel = select_kernel(node)
    inputs = [[rand(9, 1, 8), w, r, b] for _ in range(8)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(kernel.fn, inputs))
    for args, got in zip(inputs, results, strict=True):
        np.testing.assert_allclose(got[0], node.evaluate(args)[0], rtol=1e-4, atol=1e-5)
