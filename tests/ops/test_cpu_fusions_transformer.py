"""CPU transformer fusions: attention (MatMul + scale + mask + Softmax + MatMul, head split/merge taken in),
LayerNorm (MVN * gamma + beta), the MatMul residual sum; each fused kernel and each fused node's reference
against the unfused graph's NumPy reference, per dtype; what is left alone; profiling statuses."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32, bf16_kernel, exec_type
from vinerun import opset13 as ops
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.models.transformer import TransformerConfig, transformer_model, transformer_onnx

RNG = np.random.default_rng(7)
BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(np.float32): 2e-4, np.dtype(np.float16): 2e-2, BF16: 8e-2, np.dtype(np.float64): 1e-9}


def rand(shape, dtype=np.float32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def runtime_types(compiled) -> list[str]:
    return [n.type_name for n in compiled.get_runtime_model().get_ordered_ops()
            if n.type_name not in ("Parameter", "Constant", "Result")]


def check_against_reference(model: Model, inputs: list[np.ndarray], dtype=np.float32):
    """Compile on CPU and compare with the unfused graph's reference; the fused nodes' own references too."""
    want = run_reference(model, inputs)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(inputs)
    tol = TOL[np.dtype(dtype)]
    for i, w in enumerate(want):
        g = got[i]
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
    fused_model = compiled._impl.model
    ref = run_reference(fused_model, inputs)
    for r, w in zip(ref, want, strict=True):
        np.testing.assert_allclose(r.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)
    return compiled


# --- attention ---------------------------------------------------------------------------------------------


def attention_graph(dtype=np.float32, b=2, s=6, heads=3, d=4, mask: str | None = None, scale_op="mul",
                    k_transpose="attr", split=True, merge=True, extra_q_reader=False, nan_guard=False):
    """Parameter [B, S, H*D] x3 -> head split -> Q K^T -> scale -> [+ mask] -> Softmax -> @ V -> [merge]."""
    e = heads * d
    names = ("q", "k", "v")
    params = [Parameter(dtype, [b, s, e] if split else [b, heads, s, d], name=n) for n in names]
    outs = []
    for p, name in zip(params, names, strict=True):
        if split:
            r = ops.reshape(p, ops.constant(np.array([0, 0, heads, d], np.int64)), True)
            # "merged": k's head split and k^T in one Transpose, as torch's exporter writes them
            perm = [0, 2, 3, 1] if name == "k" and k_transpose == "merged" else [0, 2, 1, 3]
            outs.append(ops.transpose(r, ops.constant(np.array(perm, np.int64))).output(0))
        else:
            outs.append(p.output(0))
    q, k, v = outs
    c = 1 / math.sqrt(d)
    if scale_op == "qk":  # sqrt(c) on q and on k^T, as torch exports scaled_dot_product_attention
        q = ops.multiply(q, ops.constant(np.array(math.sqrt(c), dtype))).output(0)
    if k_transpose == "node":
        k = ops.transpose(k, ops.constant(np.array([0, 1, 3, 2], np.int64))).output(0)
    if scale_op == "qk":
        k = ops.multiply(k, ops.constant(np.array(math.sqrt(c), dtype))).output(0)
    scores = ops.matmul(q, k, False, k_transpose == "attr")
    if scale_op == "mul":
        scores = ops.multiply(scores, ops.constant(np.array(c, dtype)))
    elif scale_op == "div":
        scores = ops.divide(scores, ops.constant(np.array(1 / c, dtype)))
    if mask is not None:
        shape = {"full": [b, heads, s, s], "row": [b, 1, 1, s], "wide": [2 * b, heads, s, s]}[mask]
        m = Parameter(dtype, shape, name="mask")
        params.append(m)
        scores = ops.add(scores, m)
    probs = ops.softmax(scores, -1)
    if nan_guard:  # torch's export of scaled_dot_product_attention: a row of -inf scores gives zeros, not NaN
        probs = ops.select(ops.is_nan(probs), ops.constant(np.array([0], dtype)), probs)
    y = ops.matmul(probs, v, False, False).output(0)
    if merge:
        y = ops.transpose(y, ops.constant(np.array([0, 2, 1, 3], np.int64))).output(0)
        y = ops.reshape(y, ops.constant(np.array([0, 0, e], np.int64)), True).output(0)
    results = [Result(y)]
    if extra_q_reader:
        results.append(Result(ops.relu(q).output(0)))
    return Model(results, params, "attention")


def attention_inputs(model: Model, dtype=np.float32) -> list[np.ndarray]:
    inputs = []
    for p in model.get_parameters():
        shape = list(p.get_partial_shape().to_shape())
        if p.friendly_name == "mask":
            m = np.where(RNG.random(shape) < 0.3, -1e4, 0.0).astype(dtype)
            m[..., 0] = 0  # every row keeps a key
            inputs.append(m)
        else:
            inputs.append(rand(shape, dtype))
    return inputs


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_attention_fused_per_dtype(dtype):
    model = attention_graph(dtype)
    compiled = check_against_reference(model, attention_inputs(model, dtype), dtype)
    assert runtime_types(compiled) == ["FusedAttention"]
    node = compiled._impl.model.get_ordered_ops()[-2]
    assert (node.split, node.heads, node.merge) == ("qkv", 3, True)
    from vinerun.plugins.cpu.device_info import cpu_flags
    from vinerun.plugins.cpu.kernels import attention_c
    from vinerun.plugins.cpu.kernels._dnnl import library

    # f32: the C kernel where it is built, else oneDNN on AVX-512 CPUs
    f32 = "blocked_attention" if library() is not None and attention_c.available() else \
        "onednn_attention" if library() is not None and "avx512f" in cpu_flags() else "aten_sdpa_fused"
    blocked_bf16 = library() is not None and attention_c.available() and "avx512_bf16" in cpu_flags()
    aten = "aten_sdpa_fused"
    bf16 = "blocked_attention" if blocked_bf16 else bf16_kernel("onednn_attention", aten, aten)
    want = {BF16: bf16, np.dtype(np.float32): f32}.get(np.dtype(dtype), "aten_sdpa_fused")
    assert compiled._impl.plan.steps[0].kernel.exec_type == exec_type(want, dtype)


@pytest.mark.parametrize("mask", [None, "full", "row"])
@pytest.mark.parametrize("scale_op", ["mul", "div", None, "qk"])
@pytest.mark.parametrize("k_transpose", ["attr", "node", "merged"])
def test_attention_variants(mask, scale_op, k_transpose):
    model = attention_graph(mask=mask, scale_op=scale_op, k_transpose=k_transpose)
    compiled = check_against_reference(model, attention_inputs(model))
    assert runtime_types(compiled) == ["FusedAttention"]


@pytest.mark.parametrize("mask", ["full", "row", "heads"])
@pytest.mark.parametrize("merge", [True, False])
def test_attention_nan_guard_fuses_and_zeros_rows_the_mask_removes(mask, merge):
    shape_mask = "full" if mask == "heads" else mask
    model = attention_graph(mask=shape_mask, merge=merge, nan_guard=True, scale_op="qk", k_transpose="merged")
    inputs = attention_inputs(model)
    m = inputs[-1]
    if mask == "row":
        m[1, ...] = -np.inf  # batch 1 sees no key at all
    else:
        m[0, :, 2, :] = -np.inf  # query 2 of batch 0 sees no key (in every head)
        if mask == "heads":
            m[1, 1, 4, :] = -np.inf  # and query 4 of batch 1 in head 1 only
    compiled = check_against_reference(model, inputs)
    assert runtime_types(compiled) == ["FusedAttention"]
    y = compiled.create_infer_request().infer(inputs)[0]
    assert np.isfinite(y).all()


def test_attention_with_a_cast_after_the_softmax_fuses():
    # transformers' eager attention casts the probabilities to v's type: a Convert that does nothing in f32
    model = attention_graph(mask="row")
    softmax = next(n for n in model.get_ordered_ops() if n.type_name == "Softmax")
    ctx = next(iter(softmax.output(0).get_target_inputs()))
    ctx.replace_source_output(ops.convert(softmax, "f32").output(0))
    compiled = check_against_reference(model, attention_inputs(model))
    assert runtime_types(compiled) == ["FusedAttention"]


def test_attention_without_head_split_or_merge():
    model = attention_graph(split=False, merge=False, mask="full")
    compiled = check_against_reference(model, attention_inputs(model))
    assert runtime_types(compiled) == ["FusedAttention"]
    node = [n for n in compiled.get_runtime_model().get_ordered_ops() if n.type_name == "FusedAttention"][0]
    assert (node.split, node.merge) == ("", False)


def test_attention_keeps_a_head_split_read_elsewhere():
    """q's head split feeds another Result too: q comes in as [B, H, S, D], k and v are still taken in."""
    model = attention_graph(extra_q_reader=True)
    compiled = check_against_reference(model, attention_inputs(model))
    fused = [n for n in compiled.get_runtime_model().get_ordered_ops() if n.type_name == "FusedAttention"]
    assert len(fused) == 1 and fused[0].split == "kv"


def test_attention_mask_that_broadcasts_scores_is_left_alone():
    model = attention_graph(b=1, mask="wide")
    compiled = check_against_reference(model, attention_inputs(model))
    assert "FusedAttention" not in runtime_types(compiled)
    assert "Softmax" in runtime_types(compiled)


def test_attention_softmax_on_another_axis_is_left_alone():
    q, k, v = (Parameter(np.float32, [1, 2, 5, 4], name=n) for n in "qkv")
    probs = ops.softmax(ops.matmul(q, k, False, True), 2)
    model = Model([Result(ops.matmul(probs, v, False, False).output(0))], [q, k, v], "axis2")
    compiled = check_against_reference(model, [rand([1, 2, 5, 4]) for _ in range(3)])
    assert "FusedAttention" not in runtime_types(compiled)


# --- LayerNorm -----------------------------------------------------------------------------------------------


def layer_norm_graph(dtype=np.float32, shape=(2, 5, 16), gamma=True, beta=True, axes=(-1,), eps_mode="inside_sqrt",
                     gamma_shape=None):
    x = Parameter(dtype, list(shape), name="x")
    y = ops.mvn(x, ops.constant(np.array(axes, np.int64)), True, 1e-5, eps_mode, name="mvn")
    n = shape[-1]
    if gamma:
        y = ops.multiply(y, Constant((1 + rand(gamma_shape or [n], dtype, 0.1)).astype(dtype)), name="gamma")
    if beta:
        y = ops.add(Constant(rand([1, n], dtype, 0.1)), y, name="beta")
    return Model([Result(y.output(0))], [x], "layer_norm")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
@pytest.mark.parametrize(("gamma", "beta"), [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_fused(dtype, gamma, beta):
    model = layer_norm_graph(dtype, gamma=gamma, beta=beta)
    compiled = check_against_reference(model, [rand([2, 5, 16], dtype, 3.0)], dtype)
    assert runtime_types(compiled) == ["FusedLayerNorm"]


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_layer_norm_runs_on_onednn_where_bound(dtype):
    from vinerun.plugins.cpu.kernels._dnnl import library
    from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16

    compiled = check_against_reference(layer_norm_graph(dtype, shape=(3, 7, 48)), [rand([3, 7, 48], dtype, 3.0)], dtype)
    direct = library() is not None and (dtype == np.float32 or mkldnn_bf16())
    want = exec_type("onednn_layer_norm" if direct else "aten_layer_norm_fused", dtype)
    assert [s.kernel.exec_type for s in compiled._impl.plan.steps] == [want]


def test_layer_norm_scalar_gamma_and_rank2():
    model = layer_norm_graph(shape=(4, 8), gamma_shape=[1])
    compiled = check_against_reference(model, [rand([4, 8])])
    assert runtime_types(compiled) == ["FusedLayerNorm"]


@pytest.mark.parametrize(("axes", "eps_mode"), [((1, 2), "inside_sqrt"), ((1,), "inside_sqrt"),
                                                ((-1,), "outside_sqrt")])
def test_layer_norm_other_mvn_left_alone(axes, eps_mode):
    model = layer_norm_graph(axes=axes, eps_mode=eps_mode)
    compiled = check_against_reference(model, [rand([2, 5, 16])])
    assert "FusedLayerNorm" not in runtime_types(compiled) and "MVN" in runtime_types(compiled)


def test_layer_norm_gamma_along_another_axis_stops_the_chain():
    model = layer_norm_graph(shape=(2, 5, 16), gamma_shape=[5, 1], beta=False)
    compiled = check_against_reference(model, [rand([2, 5, 16])])
    assert runtime_types(compiled) == ["FusedLayerNorm", "Multiply"]


# --- MatMul residual sum -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("act", [None, "relu"])
@pytest.mark.parametrize("residual_first", [False, True])
def test_matmul_bias_act_sum(dtype, act, residual_first):
    x = Parameter(dtype, [2, 20, 12], name="x")
    r = Parameter(dtype, [2, 20, 7], name="r")
    y = ops.add(ops.matmul(x, Constant(rand([12, 7], dtype)), False, False), Constant(rand([7], dtype)))
    if act:
        y = ops.relu(y)
    y = ops.add(r, y) if residual_first else ops.add(y, r)
    model = Model([Result(y.output(0))], [x, r], "mm_sum")
    compiled = check_against_reference(model, [rand([2, 20, 12], dtype), rand([2, 20, 7], dtype)], dtype)
    assert runtime_types(compiled) == ["FusedMatMul"]
    node = [n for n in compiled.get_runtime_model().get_ordered_ops() if n.type_name == "FusedMatMul"][0]
    assert node.post_ops == ("bias,relu,sum" if act else "bias,sum")


def test_matmul_broadcasting_add_is_not_a_sum():
    x = Parameter(np.float32, [2, 20, 12], name="x")
    r = Parameter(np.float32, [1, 20, 7], name="r")
    y = ops.add(ops.matmul(x, Constant(rand([12, 7])), False, False), r)
    model = Model([Result(y.output(0))], [x, r], "mm_bcast")
    compiled = check_against_reference(model, [rand([2, 20, 12]), rand([1, 20, 7])])
    assert runtime_types(compiled) == ["FusedMatMul", "Add"]


# --- whole encoders, profiling -------------------------------------------------------------------------------

SMALL = TransformerConfig(batch=1, seq=8, d_model=16, heads=4, d_ff=32, layers=2)


def test_encoder_built_with_opsets_fuses_to_three_kinds():
    model = transformer_model(SMALL)
    compiled = check_against_reference(model, [rand([1, 8, 16])])
    kinds = runtime_types(compiled)
    assert set(kinds) == {"FusedMatMul", "FusedAttention", "FusedLayerNorm"}
    assert kinds.count("FusedAttention") == 2 and kinds.count("FusedLayerNorm") == 4


def test_encoder_from_onnx_fuses_and_profiles(tmp_path):
    import onnx

    path = str(tmp_path / "encoder.onnx")
    onnx.save(transformer_onnx(SMALL), path)
    core = ov.Core()
    model = core.read_model(path)
    x = rand([1, 8, 16])
    want = run_reference(model, [x])[0]
    compiled = core.compile_model(model, "CPU", {**F32, "PERF_COUNT": True})
    req = compiled.create_infer_request()
    got = req.infer([x])[0]
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    assert set(runtime_types(compiled)) == {"FusedMatMul", "FusedAttention", "FusedLayerNorm"}
    info = req.get_profiling_info()
    executed = {p.node_type for p in info if p.status == p.Status.EXECUTED}
    out = {p.node_type for p in info if p.status == p.Status.OPTIMIZED_OUT}
    assert executed == {"FusedMatMul", "FusedAttention", "FusedLayerNorm"}
    assert {"Softmax", "MatMul", "Transpose", "Reshape", "Multiply", "Add", "Gelu"} <= out  # MVN: renamed


def test_attention_with_unit_scales_on_q_and_k_fuses():
    """Whisper as transformers' sdpa exports it: q scaled by 1/sqrt(D) before its head split, then q and k^T each
    multiplied by 1.0 (torch's sqrt of the scale it was given): the no-op products leave the graph and the
    attention fuses."""
    b, s, heads, d = 1, 8, 2, 4
    x = Parameter(np.float32, [b, s, heads * d], name="x")
    q = ops.multiply(ops.matmul(x, Constant(rand([heads * d, heads * d])), False, False), Constant(np.float32(0.5)))
    k = ops.matmul(x, Constant(rand([heads * d, heads * d])), False, False)
    v = ops.matmul(x, Constant(rand([heads * d, heads * d])), False, False)
    one = Constant(np.float32(1.0))
    shape = Constant(np.array([b, s, heads, d], np.int64))
    qh = ops.multiply(ops.transpose(ops.reshape(q, shape, False), Constant(np.array([0, 2, 1, 3]))), one)
    kt = ops.multiply(ops.transpose(ops.reshape(k, shape, False), Constant(np.array([0, 2, 3, 1]))), one)
    vh = ops.transpose(ops.reshape(v, shape, False), Constant(np.array([0, 2, 1, 3])))
    ctx = ops.matmul(ops.softmax(ops.matmul(qh, kt, False, False), -1), vh, False, False)
    out = ops.reshape(ops.transpose(ctx, Constant(np.array([0, 2, 1, 3]))),
                      Constant(np.array([b, s, heads * d], np.int64)), False)
    compiled = check_against_reference(Model([out], [x]), [rand([b, s, heads * d])])
    assert "FusedAttention" in runtime_types(compiled) and "Softmax" not in runtime_types(compiled)
