"""The CPU LSTMCell kernel (one oneDNN product with the gate activations fused, ATen without oneDNN) against
the NumPy reference: batch sizes, a dynamic batch, no bias, concurrent callers, and what it leaves to the
reference."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.model import Model
from vinerun.ops.arithmetic import Add
from vinerun.ops.gather import Gather
from vinerun.ops.rnn_cells import LSTMCell
from vinerun.plugins.cpu.kernels import lstm_cell as kernel_module
from vinerun.plugins.cpu.kernels import select_kernel
from vinerun.plugins.cpu.kernels._dnnl import library

RNG = np.random.default_rng(11)


def rand(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def cell(batch: int | None, inputs: int, hidden: int, bias: bool = True, **attrs) -> tuple[LSTMCell, list]:
    """An LSTMCell with constant weights, and those weights (inputs 3..5 of a call)."""
    weights = [rand(4 * hidden, inputs), rand(4 * hidden, hidden)] + ([rand(4 * hidden)] if bias else [])
    b = -1 if batch is None else batch
    params = [Parameter("f32", [b, inputs]), Parameter("f32", [b, hidden]), Parameter("f32", [b, hidden])]
    return LSTMCell(*params, *[Constant(w) for w in weights], hidden_size=hidden, **attrs), weights


def check(node: LSTMCell, weights: list, batch: int, inputs: int, hidden: int, fn=None) -> None:
    args = [rand(batch, inputs), rand(batch, hidden), rand(batch, hidden), *weights]
    want = node.evaluate(args)
    got = (fn or select_kernel(node).fn)(args)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == np.float32
        # oneDNN against the NumPy reference: up to ~4e-6 on some draws at 128 inputs (which draws a test
        # gets depends on the tests before it in its pytest-xdist worker)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=5e-6)


@pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
@pytest.mark.parametrize(("batch", "inputs", "hidden"), [(1, 128, 128), (4, 128, 128), (16, 128, 128),
                                                         (3, 5, 7), (2, 64, 32)])
def test_onednn_cell_matches_the_reference(batch, inputs, hidden):
    node, weights = cell(batch, inputs, hidden)
    assert select_kernel(node).exec_type == "onednn_lstm_cell"
    check(node, weights, batch, inputs, hidden)


def test_no_bias_and_the_aten_path(monkeypatch):
    node, weights = cell(2, 6, 8, bias=False)
    check(node, weights, 2, 6, 8)
    monkeypatch.setattr(kernel_module, "library", lambda: None)
    node, weights = cell(3, 6, 8)
    kernel = select_kernel(node)
    assert kernel.exec_type == "aten_lstm_cell"
    check(node, weights, 3, 6, 8, kernel.fn)


def test_dynamic_batch_beyond_the_primitives_made():
    node, weights = cell(None, 12, 16)
    kernel = select_kernel(node)
    for batch in (1, 2, 3, 4, 5, 6, 1):  # more sizes than BATCH_SIZES: the rest runs ATen
        check(node, weights, batch, 12, 16, kernel.fn)


def test_states_broadcast_against_the_input_run_the_reference():
    node, weights = cell(None, 4, 8)
    args = [rand(3, 4), rand(1, 8), rand(1, 8), *weights]
    for g, w in zip(select_kernel(node).fn(args), node.evaluate(args), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_concurrent_callers_get_their_own_buffers():
    node, weights = cell(2, 32, 32)
    kernel = select_kernel(node)
    calls = [[rand(2, 32), rand(2, 32), rand(2, 32), *weights] for _ in range(64)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(kernel.fn, calls))
    for g, args in zip(got, calls, strict=True):
        np.testing.assert_allclose(g[1], node.evaluate(args)[1], rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("attrs", [{"clip": 0.5}, {"activations": ["sigmoid", "relu", "tanh"]},
                                   {"activations": ["tanh", "tanh", "tanh"]}])
def test_other_attributes_run_the_reference(attrs):
    node, weights = cell(2, 4, 8, **attrs)
    assert select_kernel(node).exec_type == "ref"


def test_compiled_cell():
    node, weights = cell(1, 16, 8)
    model = Model(node.outputs(), [o.node for o in node.input_values()[:3]])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    args = [rand(1, 16), rand(1, 8), rand(1, 8)]
    got = compiled.create_infer_request().infer(args)
    for i, want in enumerate(node.evaluate([*args, *weights])):
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=2e-6)


@pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
def test_the_cell_runs_inside_a_native_segment(monkeypatch):
    """x, h and c taken from one tensor (as silero-vad takes its state), h' + c' after: one segment."""
    hidden = 16
    s = Parameter("f32", [3, 2, hidden])
    x, h, c = (Gather(s, Constant(np.int64(k)), Constant(np.int64(0))) for k in range(3))
    node = LSTMCell(x, h, c, Constant(rand(4 * hidden, hidden)), Constant(rand(4 * hidden, hidden)),
                    Constant(rand(4 * hidden)), hidden_size=hidden)
    model = Model([Add(node.output(0), node.output(1))], [s])
    check_one_segment(model, rand(3, 2, hidden), monkeypatch, "LSTMCell", tolerance=1e-5)
