"""The f32 attention C kernel (FusedAttention): every head layout, mask broadcast and size the kernel tiles
differently gives what the node's NumPy reference gives; strided q/k/v (a fused QKV product's split) run in a
native segment; layouts it does not read fall back to ATen.
"""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import BF16, F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.concat_split import VariadicSplit
from vinerun.ops.matmul import MatMul
from vinerun.plugins.cpu.device_info import cpu_flags
from vinerun.plugins.cpu.kernels import attention_c, profiled_exec_type
from vinerun.plugins.cpu.kernels._ckernel import amx_ready
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.transformations.fused_transformer import FusedAttention

pytestmark = pytest.mark.skipif(library() is None or not attention_c.available(),
                                reason="needs the oneDNN binding and the C kernels (a C compiler at install)")
RNG = np.random.default_rng(7)


def rand(shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def attention_model(q_shape, k_shape, v_shape, heads=0, split="", merge=False, mask_shape=None, scale=0.25):
    params = [Parameter(Type.f32, list(s)) for s in (q_shape, k_shape, v_shape)]
    if mask_shape is not None:
        params.append(Parameter(Type.f32, list(mask_shape)))
    node = FusedAttention(params, heads=heads, split=split, merge=merge, scale=scale)
    return Model([node], params), node


def check(model, node, inputs, rtol=1e-5, atol=1e-5):
    cm = ov.Core().compile_model(model, "CPU", F32)
    assert [s.kernel.exec_type for s in cm._impl.plan.steps] == ["blocked_attention"]
    got = cm.create_infer_request().infer(dict(enumerate(inputs)))[0]
    want = node.evaluate([np.asarray(a, np.float64) for a in inputs])[0]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return got


@pytest.mark.parametrize("b,s,h,d", [(1, 128, 12, 32), (2, 7, 3, 24), (1, 70, 2, 64), (1, 33, 1, 80),
                                     (3, 1, 4, 16), (1, 300, 2, 8)])
@pytest.mark.parametrize("merge", [True, False])
def test_split_heads(b, s, h, d, merge):
    model, node = attention_model((b, s, h * d), (b, s, h * d), (b, s, h * d), heads=h, split="qkv", merge=merge)
    check(model, node, [rand([b, s, h * d]) for _ in range(3)])


@pytest.mark.parametrize("sq,sk,d,dv", [(5, 19, 40, 24), (64, 17, 32, 48), (1, 129, 16, 16), (40, 40, 8, 100)])
def test_cross_attention_and_unequal_head_sizes(sq, sk, d, dv):
    b, h = 2, 3
    model, node = attention_model((b, h, sq, d), (b, h, sk, d), (b, h, sk, dv))
    check(model, node, [rand([b, h, sq, d]), rand([b, h, sk, d]), rand([b, h, sk, dv])])


@pytest.mark.parametrize("mask_shape", [(2, 1, 1, 20), (1, 1, 9, 20), (2, 3, 9, 20), (9, 20), (20,), (1, 3, 1, 20)])
def test_mask_broadcasts(mask_shape):
    model, node = attention_model((2, 3, 9, 16), (2, 3, 20, 16), (2, 3, 20, 16), mask_shape=mask_shape)
    mask = np.where(RNG.random(mask_shape) < 0.3, -1e9, RNG.standard_normal(mask_shape)).astype(np.float32)
    check(model, node, [rand([2, 3, 9, 16]), rand([2, 3, 20, 16]), rand([2, 3, 20, 16]), mask])


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract")  # the reference's -inf - -inf
def test_fully_masked_rows_give_nan_as_the_reference():
    model, node = attention_model((1, 1, 4, 16), (1, 1, 6, 16), (1, 1, 6, 16), mask_shape=(1, 1, 4, 6))
    mask = np.zeros((1, 1, 4, 6), np.float32)
    mask[0, 0, 2] = -np.inf
    got = check(model, node, [rand([1, 1, 4, 16]), rand([1, 1, 6, 16]), rand([1, 1, 6, 16]), mask])
    assert np.isnan(got[0, 0, 2]).all() and not np.isnan(got[0, 0, [0, 1, 3]]).any()


def test_nan_inputs_propagate():
    model, node = attention_model((1, 1, 3, 16), (1, 1, 5, 16), (1, 1, 5, 16))
    k = rand([1, 1, 5, 16])
    k[0, 0, 3, 7] = np.nan
    cm = ov.Core().compile_model(model, "CPU", F32)
    got = cm.create_infer_request().infer({0: rand([1, 1, 3, 16]), 1: k, 2: rand([1, 1, 5, 16])})[0]
    assert np.isnan(got).all()


def test_large_scores_stay_finite():
    """Scores of +-1e4: the softmax subtracts each row's maximum (no overflow in exp)."""
    model, node = attention_model((1, 2, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16), scale=1.0)
    check(model, node, [rand([1, 2, 8, 16], 30.0), rand([1, 2, 8, 16], 30.0), rand([1, 2, 8, 16])], atol=1e-4)


def fused_qkv_model(b=1, s=20, h=4, d=16, mask=True):
    """x @ W_qkv -> VariadicSplit into q, k, v (strided views of one buffer) -> attention (mask) -> merged heads."""
    e = h * d
    x = Parameter(Type.f32, [b, s, e])
    params = [x]
    qkv = MatMul(x, Constant(rand([e, 3 * e], 0.2)))
    parts = VariadicSplit(qkv, Constant(np.int64(2)), Constant(np.array([e, e, e], np.int64)))
    inputs = [parts.output(0), parts.output(1), parts.output(2)]
    if mask:
        params.append(Parameter(Type.f32, [b, 1, 1, s]))
        inputs.append(params[-1].output(0))
    att = FusedAttention(inputs, heads=h, split="qkv", merge=True, scale=0.25)
    return Model([att], params), att


def test_strided_views_of_a_fused_qkv_product_in_a_native_segment(monkeypatch):
    model, _ = fused_qkv_model(mask=False)
    seg, _ = check_one_segment(model, rand([1, 20, 64]), monkeypatch, "FusedAttention", tolerance=1e-5)
    assert [s.kernel.exec_type for s in seg.steps][-1] == "blocked_attention"


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_counts_with_a_mask(threads):
    model, att = fused_qkv_model(b=2, s=37, h=6, d=24)
    x, mask = rand([2, 37, 144]), np.where(RNG.random([2, 1, 1, 37]) < 0.2, -1e4, 0).astype(np.float32)
    cm = ov.Core().compile_model(model, "CPU", {**F32, "INFERENCE_NUM_THREADS": threads})
    got = cm.create_infer_request().infer({0: x, 1: mask})[0]
    want = ov.Core().compile_model(model, "CPU", {**F32, "EXECUTION_MODE_HINT": "ACCURACY"})
    np.testing.assert_allclose(got, want.create_infer_request().infer({0: x, 1: mask})[0], rtol=1e-5, atol=1e-5)


def test_dynamic_sequence_length_runs_the_kernel_from_python():
    x = Parameter(Type.f32, [1, -1, 32])
    node = FusedAttention([x, x, x], heads=2, split="qkv", merge=True, scale=0.25)
    cm = ov.Core().compile_model(Model([node], [x]), "CPU", {**F32, "CPU_RUNTIME_CACHE_CAPACITY": 0})
    request = cm.create_infer_request()
    for s in (3, 50, 3):
        data = rand([1, s, 32])
        want = node.evaluate([data.astype(np.float64)] * 3)[0]
        np.testing.assert_allclose(request.infer({0: data})[0], want, rtol=1e-5, atol=1e-5)
    assert cm._impl.plan.steps[0].kernel.exec_type == "blocked_attention"


def test_a_mask_with_strided_keys_falls_back_to_aten():
    """The kernel reads a mask's key axis contiguous; a transposed mask runs the ATen path, same result."""
    model, node = attention_model((1, 2, 5, 16), (1, 2, 6, 16), (1, 2, 6, 16), mask_shape=(1, 1, 5, 6))
    cm = ov.Core().compile_model(model, "CPU", F32)
    mask = np.ascontiguousarray(rand([1, 1, 6, 5])).transpose(0, 1, 3, 2)  # key axis strided
    inputs = [rand([1, 2, 5, 16]), rand([1, 2, 6, 16]), rand([1, 2, 6, 16]), mask]
    assert attention_c.mask_strides((mask.shape, mask.strides, mask.dtype), (1, 2, 5, 6)) is None
    got = cm.create_infer_request().infer(dict(enumerate(inputs)))[0]
    np.testing.assert_allclose(got, node.evaluate([np.asarray(a, np.float64) for a in inputs])[0], rtol=1e-5,
                               atol=1e-5)


# --- bf16 (AVX512-BF16 dot products; AMX tiles where the CPU has them) -------------------------------------------

needs_bf16 = pytest.mark.skipif("avx512_bf16" not in cpu_flags(), reason="needs AVX512-BF16")


@pytest.fixture(params=["amx", "avx512"])
def tiles(request, monkeypatch):
    """Each bf16 case on both paths of the kernel: AMX tile products (on a CPU with AMX) and AVX512-BF16 dot
    products (everywhere, AMX turned off for the kernels made here)."""
    if request.param == "amx" and not amx_ready():
        pytest.skip("needs AMX (and Linux's grant of the tile state)")
    if request.param == "avx512":
        monkeypatch.setattr(attention_c, "amx_ready", lambda: False)
    return request.param


def bf16_attention_model(q_shape, k_shape, v_shape, heads=0, split="", merge=False, mask_type=None, mask_shape=None,
                         scale=0.2):
    params = [Parameter(Type.bf16, list(s)) for s in (q_shape, k_shape, v_shape)]
    if mask_type is not None:
        params.append(Parameter(mask_type, list(mask_shape)))
    node = FusedAttention(params, heads=heads, split=split, merge=merge, scale=scale)
    return Model([node], params), node


def check_bf16(model, node, inputs, tiles):
    """Against the f64 reference on the same bf16 inputs: the weights and the output round to bf16 (8 bits), so
    the error stays within ~2^-7 of the values' range. Profiling names the tile unit where it ran there."""
    cm = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    assert [s.kernel.exec_type for s in cm._impl.plan.steps] == ["blocked_attention_bf16"]
    impl = "blocked_attention[amx]_bf16" if tiles == "amx" else "blocked_attention_bf16"
    assert [profiled_exec_type(s.kernel) for s in cm._impl.plan.steps] == [impl]
    got = cm.create_infer_request().infer(dict(enumerate(inputs)))[0]
    assert got.dtype == BF16
    want = node.evaluate([np.asarray(a, np.float64) for a in inputs])[0]
    v_range = float(np.abs(np.asarray(inputs[2], np.float64)).max())
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=0, atol=2 ** -7 * v_range)
    return got


@needs_bf16
@pytest.mark.parametrize("b,s,h,d", [(1, 128, 12, 32), (2, 7, 3, 24), (1, 45, 2, 64), (1, 33, 1, 17),
                                     (1, 300, 2, 8), (1, 50, 2, 80)])
def test_bf16_split_heads(b, s, h, d, tiles):
    model, node = bf16_attention_model((b, s, h * d), (b, s, h * d), (b, s, h * d), heads=h, split="qkv",
                                       merge=True)
    check_bf16(model, node, [rand([b, s, h * d]).astype(BF16) for _ in range(3)], tiles)


@needs_bf16
@pytest.mark.parametrize("mask_type", [Type.f32, Type.bf16])
@pytest.mark.parametrize("sq,sk,d,dv", [(5, 19, 40, 24), (40, 17, 31, 48), (1, 129, 16, 16), (17, 70, 8, 100)])
def test_bf16_cross_attention_with_masks(mask_type, sq, sk, d, dv, tiles):
    b, h = 2, 3
    model, node = bf16_attention_model((b, h, sq, d), (b, h, sk, d), (b, h, sk, dv), mask_type=mask_type,
                                       mask_shape=(b, 1, 1, sk))
    mask = np.where(RNG.random([b, 1, 1, sk]) < 0.3, -1e4, 0).astype(mask_type.to_dtype())
    check_bf16(model, node, [rand([b, h, sq, d]).astype(BF16), rand([b, h, sk, d]).astype(BF16),
                             rand([b, h, sk, dv]).astype(BF16), mask], tiles)


@needs_bf16
@pytest.mark.parametrize("scale", [-0.3, 1.0, 0.0])
def test_bf16_scales_the_tiles_do_not_fold_into_the_softmax(scale, tiles):
    """The tile products come out unscaled: a positive scale is the softmax's, others are applied first."""
    b, h, s, d = 1, 2, 37, 24
    model, node = bf16_attention_model((b, h, s, d), (b, h, s, d), (b, h, s, d), scale=scale)
    check_bf16(model, node, [rand([b, h, s, d]).astype(BF16) for _ in range(3)], tiles)


@needs_bf16
def test_bf16_runs_in_a_native_segment_of_bert():
    """A bf16 transformer layer stays one native segment: attention included."""
    from vinerun.models.transformer import TransformerConfig, transformer_onnx

    onnx_model = transformer_onnx(TransformerConfig(batch=1, seq=16, d_model=64, heads=4, d_ff=128, layers=1, seed=0))
    cm = ov.Core().compile_model(onnx_model.SerializeToString(), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    types = {type(item).__name__ for item in cm._impl.plan.items}
    assert types == {"Segment"}
    assert "blocked_attention_bf16" in [s.kernel.exec_type for s in cm._impl.plan.steps]


def test_a_growing_kv_cache_runs_the_kernel_at_every_length():
    """A decoder step: q of one token, k/v one longer per call; past the kernels made per layout, the first one
    runs with its parameters rewritten, and calls back at the first length still get their own kernel's."""
    b, h, d = 1, 4, 16
    model, node = attention_model((b, 1, h * d), (b, h, -1, d), (b, h, -1, d), heads=h, split="q", merge=True,
                                  mask_shape=(b, 1, 1, -1))
    cm = ov.Core().compile_model(model, "CPU", F32)
    request = cm.create_infer_request()
    kernel = cm._impl.plan.steps[0].kernel
    assert kernel.exec_type == "blocked_attention"
    for length in [*range(3, 3 + 3 * attention_c.LAYOUTS), 3, 5]:
        inputs = [rand([b, 1, h * d]), rand([b, h, length, d]), rand([b, h, length, d]),
                  np.where(RNG.random((b, 1, 1, length)) < 0.2, -1e9, 0).astype(np.float32)]
        got = request.infer(dict(enumerate(inputs)))[0]
        want = node.evaluate([np.asarray(a, np.float64) for a in inputs])[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"kv length {length}")


def test_a_growing_kv_cache_never_falls_back_to_aten(monkeypatch):
    b, h, d = 1, 2, 8
    model, _ = attention_model((b, h, 1, d), (b, h, -1, d), (b, h, -1, d))
    import torch.nn.functional as F

    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **k: pytest.fail("ATen fallback"))
    cm = ov.Core().compile_model(model, "CPU", F32)  # the kernel takes its fallback when it is made
    request = cm.create_infer_request()
    for length in range(1, 2 + 2 * attention_c.LAYOUTS):
        request.infer([rand([b, h, 1, d]), rand([b, h, length, d]), rand([b, h, length, d])])


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_the_nan_guard_runs_in_the_kernel(precision):
    """zero_masked_rows (an exporter's ``where(isnan(p), 0, p)`` after the softmax): rows whose keys the mask
    removes entirely, and rows a NaN key makes NaN, give zeros, as the unfused graph does; static shapes keep
    the kernel's native step."""
    if precision == "bf16" and "avx512_bf16" not in cpu_flags():
        pytest.skip("bf16 attention needs AVX512-BF16")
    b, h, s, d = 2, 2, 5, 16
    params = [Parameter(Type.f32, [b, h, s, d]) for _ in range(3)] + [Parameter(Type.f32, [b, 1, s, s])]
    node = FusedAttention(params, heads=0, split="", merge=False, scale=0.25, zero_masked_rows=True)
    model = Model([node], params)
    q, k, v = rand([b, h, s, d]), rand([b, h, s, d]), rand([b, h, s, d])
    mask = np.zeros((b, 1, s, s), np.float32)
    mask[0, 0, 3] = -np.inf  # query 3 of batch 0 sees no key
    k[1, 1, 2, 0] = np.nan  # every query of batch 1, head 1 sees a NaN score
    cm = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision})
    step = next(s for s in cm._impl.plan.steps if s.node.type_name == "FusedAttention")
    assert step.kernel.exec_type.startswith("blocked_attention") and step.kernel.native is not None
    got = cm.create_infer_request().infer([q, k, v, mask])[0].astype(np.float32)
    assert not got[0, :, 3].any() and not got[1, 1].any()
    keep = np.ones(got.shape, bool)
    keep[0, :, 3] = keep[1, 1] = False
    want = node.evaluate([np.asarray(a, np.float64) for a in (q, k, v, mask)])[0]
    tol = 1e-5 if precision == "f32" else 3e-2
    np.testing.assert_allclose(got[keep], want[keep], rtol=tol, atol=tol)
