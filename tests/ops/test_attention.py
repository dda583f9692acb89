"""Attention-family ops: hand-checked references, SDPA against openvino, CPU kernels against references."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.ops._precision import exec_type
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.types import Type
from vinerun.ops.attention import Attention
from vinerun.ops.flex_attention import FlexAttention
from vinerun.ops.gated import CausalConvWithState, SwiGLU
from vinerun.ops.linear_attention import LinearAttention
from vinerun.ops.rotary import RotaryEmbedding
from vinerun.ops.sdpa import ScaledDotProductAttention
from vinerun.plugins.cpu.kernels import select_kernel

rng = np.random.default_rng(0)
BF16 = np.dtype(ml_dtypes.bfloat16)


def _rand(*shape: int, dtype=np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _params(*arrays) -> list:
    return [None if a is None else Parameter(Type(a.dtype), list(a.shape)) for a in arrays]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


# --- ONNX Attention ------------------------------------------------------------------------------
def test_attention_plain_matches_textbook():
    q, k, v = _rand(1, 2, 3, 4), _rand(1, 2, 5, 4), _rand(1, 2, 5, 6)
    y, pk, pv, qk = Attention(*_params(q, k, v)).evaluate([q, k, v])
    want = _softmax(q @ k.transpose(0, 1, 3, 2) / 2.0) @ v
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(qk, q @ k.transpose(0, 1, 3, 2) / 2.0, rtol=1e-5, atol=1e-6)
    assert pk.shape == k.shape and y.dtype == np.float32


def test_attention_3d_gqa_shapes():
    q, k, v = Parameter(Type.f32, [2, 4, 6 * 8]), Parameter(Type.f32, [2, 5, 2 * 8]), Parameter(Type.f32, [2, 5, 2 * 3])
    node = Attention(q, k, v, q_num_heads=6, kv_num_heads=2)
    assert [list(o.get_shape()) for o in node.outputs()] == [[2, 4, 18], [2, 2, 5, 8], [2, 2, 5, 3], [2, 6, 4, 5]]


def test_attention_causal_with_past_is_offset():
    # with 2 past keys, query 0 sees keys 0..2
    q, k, v = _rand(1, 1, 2, 4), _rand(1, 1, 2, 4), _rand(1, 1, 2, 4)
    pk, pv = _rand(1, 1, 2, 4), _rand(1, 1, 2, 4)
    node = Attention(*_params(q, k, v), None, *_params(pk, pv), is_causal=1, qk_matmul_output_mode=3)
    y, present_k, _, probs = node.evaluate([q, k, v, None, pk, pv])
    assert present_k.shape == (1, 1, 4, 4)
    np.testing.assert_array_equal(probs[0, 0] > 0, [[True, True, True, False], [True, True, True, True]])


def test_attention_fully_masked_row_is_zero():
    q, k, v = _rand(1, 1, 2, 4), _rand(1, 1, 3, 4), _rand(1, 1, 3, 4)
    mask = np.array([[False, False, False], [True, True, False]])
    y = Attention(*_params(q, k, v, mask)).evaluate([q, k, v, mask])[0]
    assert np.all(y[0, 0, 0] == 0) and np.all(np.isfinite(y))


def test_attention_softcap_and_window():
    q, k, v = _rand(1, 1, 4, 2), _rand(1, 1, 4, 2), _rand(1, 1, 4, 2)
    node = Attention(*_params(q, k, v), softcap=1.0, left_window_size=1, right_window_size=0, qk_matmul_output_mode=3)
    probs = node.evaluate([q, k, v])[3][0, 0]
    np.testing.assert_array_equal(probs > 0, np.eye(4, dtype=bool) | np.eye(4, k=-1, dtype=bool))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
@pytest.mark.parametrize("case", ["plain", "causal_past", "gqa_mask_3d", "nonpad"])
def test_attention_kernel(dtype, case):
    q, k, v = _rand(2, 4, 3, 8, dtype=dtype), _rand(2, 2, 5, 8, dtype=dtype), _rand(2, 2, 5, 6, dtype=dtype)
    args: list = [q, k, v]
    attrs: dict = {}
    if case == "causal_past":
        args += [None, _rand(2, 2, 2, 8, dtype=dtype), _rand(2, 2, 2, 6, dtype=dtype)]
        attrs["is_causal"] = 1
    elif case == "gqa_mask_3d":
        q, k, v = q.transpose(0, 2, 1, 3).reshape(2, 3, 32), k.transpose(0, 2, 1, 3).reshape(2, 5, 16), \
            v.transpose(0, 2, 1, 3).reshape(2, 5, 12)
        args = [q, k, v, rng.random((3, 5)) > 0.3]
        attrs.update(q_num_heads=4, kv_num_heads=2)
    elif case == "nonpad":
        args += [None, None, None, np.array([5, 3], np.int64)]
        attrs["is_causal"] = 1
    node = Attention(*_params(*args), **attrs)
    Result(node.output(0))
    kernel = select_kernel(node)
    assert kernel.exec_type == exec_type("aten_sdpa", dtype)
    tol = 2e-2 if dtype in (np.float16, BF16) else 1e-5
    for got, want in zip(kernel.fn(args)[:3], node.evaluate(args)[:3], strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


def test_attention_kernel_declines_consumed_qk_output():
    q = _rand(1, 1, 2, 4)
    node = Attention(*_params(q, q, q))
    Result(node.output(3))
    assert select_kernel(node).exec_type == "ref"


# --- OpenVINO ScaledDotProductAttention --------------------------------------------------------------
@pytest.mark.parametrize("mode", ["none", "causal", "bool", "float"])
def test_sdpa_vs_openvino(mode):
    ov = pytest.importorskip("openvino")
    ops = pytest.importorskip("openvino.opset13")
    q, k, v = _rand(2, 3, 4, 8), _rand(2, 3, 6, 8), _rand(2, 3, 6, 5)
    args = [q, k, v]
    if mode == "bool":
        args.append(np.tril(np.ones((4, 6), bool), 2))
    elif mode == "float":
        args.append(_rand(1, 1, 4, 6))
    args.append(np.array(0.3, np.float32))
    if mode in ("none", "causal"):
        args.insert(3, np.zeros((1, 1, 1, 1), np.float32))
    causal = mode == "causal"
    ours = ScaledDotProductAttention(*_params(*args), causal=causal).evaluate(args)[0]
    params = [ops.parameter(list(a.shape), a.dtype) for a in args]
    model = ov.Model([ops.scaled_dot_product_attention(*params, causal=causal)], params)
    theirs = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(args)[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
@pytest.mark.parametrize("mode", ["none", "causal", "bool", "float"])
def test_sdpa_kernel(dtype, mode):
    q, k, v = _rand(2, 3, 4, 8, dtype=dtype), _rand(2, 3, 6, 8, dtype=dtype), _rand(2, 3, 6, 5, dtype=dtype)
    args = [q, k, v]
    if mode == "bool":
        args.append(np.tril(np.ones((4, 6), bool), 2))
    elif mode == "float":
        args.append(_rand(1, 1, 4, 6, dtype=dtype))
    node = ScaledDotProductAttention(*_params(*args), causal=mode == "causal")
    kernel = select_kernel(node)
    assert kernel.exec_type == exec_type("aten_sdpa", dtype)
    got, want = kernel.fn(args)[0], node.evaluate(args)[0]
    tol = 2e-2 if dtype in (np.float16, BF16) else 1e-5
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


def test_flex_attention_without_modifiers_is_sdpa():
    q, k, v = _rand(1, 4, 3, 8), _rand(1, 2, 5, 8), _rand(1, 2, 5, 8)
    y = FlexAttention(*_params(q, k, v)).evaluate([q, k, v])[0]
    k2, v2 = np.repeat(k, 2, 1), np.repeat(v, 2, 1)
    want = ScaledDotProductAttention(*_params(q, k2, v2)).evaluate([q, k2, v2])[0]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


# --- rotary, SwiGLU, causal conv, linear attention -----------------------------------------------
def test_rotary_half_split_by_hand():
    x = np.array([[[[1.0, 2.0, 3.0, 4.0]]]], np.float32)  # [b=1, heads=1, seq=1, head=4]
    cos, sin = np.array([[[0.0, 1.0]]], np.float32), np.array([[[1.0, 0.0]]], np.float32)
    y = RotaryEmbedding(*_params(x, cos, sin)).evaluate([x, cos, sin])[0]
    # pairs (x0, x2) = (1, 3) rotated by 90 degrees -> (-3, 1); (x1, x3) = (2, 4) unrotated
    np.testing.assert_allclose(y.reshape(-1), [-3.0, 2.0, 1.0, 4.0])
    y = RotaryEmbedding(*_params(x, cos, sin), interleaved=1).evaluate([x, cos, sin])[0]
    np.testing.assert_allclose(y.reshape(-1), [-2.0, 1.0, 3.0, 4.0])


def test_swiglu():
    a, b = np.array([0.0, 1.0], np.float32), np.array([2.0, 3.0], np.float32)
    y = SwiGLU(*_params(a, b), alpha=2.0).evaluate([a, b])[0]
    np.testing.assert_allclose(y, [0.0, 3.0 / (1 + np.exp(-2.0))], rtol=1e-6)


def test_causal_conv_with_state_by_hand():
    x = np.array([[[1.0, 2.0, 3.0]]], np.float32)
    w = np.array([[[1.0, 10.0]]], np.float32)
    past = np.array([[[5.0]]], np.float32)
    node = CausalConvWithState(*_params(x, w), None, *_params(past))
    assert list(node.output(1).get_shape()) == [1, 1, 1]
    y, state = node.evaluate([x, w, None, past])
    np.testing.assert_allclose(y.reshape(-1), [5 + 10, 1 + 20, 2 + 30])
    np.testing.assert_allclose(state.reshape(-1), [3.0])


def test_linear_attention_linear_rule_is_causal_sum():
    b, t, d = 1, 3, 2
    q, k, v = _rand(b, t, d), _rand(b, t, d), _rand(b, t, d)
    out, state = LinearAttention(*_params(q, k, v), q_num_heads=1, kv_num_heads=1, update_rule="linear",
                                 scale=1.0).evaluate([q, k, v])
    scores = np.tril(q[0] @ k[0].T)
    np.testing.assert_allclose(out[0], scores @ v[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state[0, 0], k[0].T @ v[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_gated_kernels(dtype):
    a, b = _rand(3, 8, dtype=dtype), _rand(3, 8, dtype=dtype)
    node = SwiGLU(*_params(a, b), alpha=1.5)
    kernel = select_kernel(node)
    assert kernel.exec_type == exec_type("aten_swiglu", dtype)
    got, want = kernel.fn([a, b])[0], node.evaluate([a, b])[0]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-5, atol=1e-6)
    x, w, bias, past = _rand(2, 4, 5, dtype=dtype), _rand(4, 1, 3, dtype=dtype), _rand(4, dtype=dtype), \
        _rand(2, 4, 2, dtype=dtype)
    for args in ([x, w], [x, w, bias, past], [x, w, None, past]):
        node = CausalConvWithState(*_params(*args), activation="silu")
        kernel = select_kernel(node)
        assert kernel.exec_type == exec_type("aten_conv1d", dtype)
        for got, want in zip(kernel.fn(args), node.evaluate(args), strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            tol = 1e-2 if dtype in (np.float16, BF16) else 1e-5
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)
