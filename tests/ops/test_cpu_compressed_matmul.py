"""Weight-only compression on the CPU: MatMuls and embedding Gathers by int8 / int4 weights (OpenVINO IR / NNCF
decompression subgraphs and ONNX DequantizeLinear) run on the compressed-weight kernels, give what the reference
gives (per dtype, group size, zero point, row count; activations quantized on the fly or not), keep the weights
compressed in the compiled model, and honour DYNAMIC_QUANTIZATION_GROUP_SIZE.
"""

from __future__ import annotations

import shutil
import sysconfig

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add, Multiply, Subtract
from vinerun.ops.convert import Convert
from vinerun.ops.gather import Gather
from vinerun.ops.matmul import MatMul
from vinerun.ops.reshape import Reshape
from vinerun.plugins.cpu.compressed_layout import CompressedWeight, dequantize_rows
from vinerun.plugins.cpu.compressed_weights import CompressedMatMul, read_weight
from vinerun.plugins.cpu.kernels import compressed_matmul
from vinerun.plugins.cpu.kernels.compressed_matmul import CompressedGemm, dq_chunk

RNG = np.random.default_rng(7)
F32 = {"INFERENCE_PRECISION_HINT": "f32"}
needs_kernel = pytest.mark.skipif(not compressed_matmul.available(), reason="the C kernel was not built")
DTYPES = {("i", 8): np.int8, ("u", 8): np.uint8, ("i", 4): ml_dtypes.int4, ("u", 4): ml_dtypes.uint4}


def random_weight(n: int, k: int, bits: int, signed: bool, group: int, zero_point: bool) -> CompressedWeight:
    lo, hi = (-(1 << bits - 1), 1 << bits - 1) if signed else (0, 1 << bits)
    q = RNG.integers(lo, hi, (n, k))
    scale = RNG.uniform(0.002, 0.02, (n, k // group)).astype(np.float32)
    zp = RNG.integers(lo, hi, (n, k // group)).astype(np.float32) if zero_point else None
    return CompressedWeight(q, scale, zp, bits, signed)


def dense(cw: CompressedWeight) -> np.ndarray:
    zp = 0 if cw.zero_point is None else np.repeat(cw.zero_point, cw.group, 1)
    return ((cw.q - zp) * np.repeat(cw.scale, cw.group, 1)).astype(np.float32)


@pytest.mark.parametrize("bits,signed", [(8, True), (8, False), (4, True), (4, False)])
@pytest.mark.parametrize("group", [32, 128, 256])
def test_layout_round_trips(bits, signed, group):
    cw = random_weight(37, 256, bits, signed, group, zero_point=True)
    packed, scale, zp = cw.packed()
    assert packed.nbytes == 48 * 256 * bits // 8  # 37 columns padded to 3 panels of 16; nothing else stored
    np.testing.assert_allclose(dequantize_rows(packed, scale, zp, bits, 256, np.arange(37)), dense(cw), atol=1e-6)


@needs_kernel
@pytest.mark.parametrize("bits,signed", [(8, True), (8, False), (4, True), (4, False)])
@pytest.mark.parametrize("group", [32, 128, 384])
@pytest.mark.parametrize("zero_point", [False, True])
def test_kernel_matches_the_reference_op(bits, signed, group, zero_point):
    n, k = 70, 384
    cw = random_weight(n, k, bits, signed, group, zero_point)
    packed, scale, zp = cw.packed()
    bias = RNG.standard_normal(n).astype(np.float32)
    node = CompressedMatMul([Parameter(Type.f32, [-1, k]), *(Constant(a) for a in (packed, scale, zp, bias))],
                            n=n, k=k, group=group, bits=bits)
    for rows in (1, 3, 4, 9):
        x = RNG.standard_normal((rows, k)).astype(np.float32)
        ref = node.evaluate([x, packed, scale, zp, bias])[0]
        np.testing.assert_allclose(ref, x @ dense(cw).T + bias, rtol=1e-4, atol=1e-4)
        exact = CompressedGemm(packed, scale, zp, bias, n, k, group, bits, 0)(x)
        np.testing.assert_allclose(exact, ref, rtol=1e-5, atol=1e-4 * np.abs(ref).max())
        for dq in (32, 128, k):
            got = CompressedGemm(packed, scale, zp, bias, n, k, group, bits, dq_chunk(k, group, bits, dq))(x)
            # the reference op on the activations as the kernel quantizes them (s8 per row and group of dq)
            want = node.evaluate([quantized(x, dq), packed, scale, zp, bias])[0]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.abs(want).max())
            assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max()  # and 8-bit activations are close to f32


def quantized(x: np.ndarray, dq: int) -> np.ndarray:
    """``x`` rounded as the kernel's dynamic quantization does: symmetric s8, one scale per row and dq columns."""
    g = x.reshape(x.shape[0], -1, dq)
    amax = np.abs(g).max(-1, keepdims=True)
    inv = np.where(amax > 0, np.float32(127) / np.where(amax > 0, amax, 1), 0).astype(np.float32)
    return (np.rint(g * inv) * (amax / np.float32(127))).reshape(x.shape).astype(np.float32)


def test_dq_chunk_rules():
    assert dq_chunk(768, 128, 4, 0) == 0  # off
    assert dq_chunk(768, 128, 4, 32) == 32
    assert dq_chunk(768, 768, 8, 1 << 62) == 768  # more than k: per row
    assert dq_chunk(768, 128, 4, 48) == 0  # 48 and 128: neither divides the other -> f32
    assert dq_chunk(768, 128, 4, 4) == 0  # less than an int4 step


def openvino_weight(n: int, k: int, et: Type, group: int | None, zero_point: bool) -> tuple[object, np.ndarray]:
    """An NNCF-style decompression subgraph for W [n, k] and its dense f32 value."""
    signed, bits = et in (Type.i8, Type.i4), 4 if et in (Type.i4, Type.u4) else 8
    g = group or k
    cw = random_weight(n, k, bits, signed, g, zero_point)
    shape = (n, k // g, g) if group else (n, k)
    q = Constant(cw.q.reshape(shape).astype(DTYPES[("i" if signed else "u", bits)]))
    pshape = (n, k // g, 1) if group else (n, 1)
    v = Convert(q, destination_type=Type.f16)
    if zero_point:
        zp = Constant(cw.zero_point.reshape(pshape).astype(DTYPES[("i" if signed else "u", bits)]))
        v = Subtract(v, Convert(zp, destination_type=Type.f16))
    v = Multiply(v, Constant(cw.scale.reshape(pshape).astype(np.float16)))
    if group:
        v = Reshape(v, Constant(np.array([n, k], np.int64)), special_zero=False)
    w = dense(CompressedWeight(cw.q, cw.scale.astype(np.float16).astype(np.float32), cw.zero_point, bits, signed))
    return Convert(v, destination_type=Type.f32), w


def profile(compiled, inputs) -> tuple[list[np.ndarray], dict[str, str]]:
    request = compiled.create_infer_request()
    out = request.infer(inputs)
    return [np.asarray(v) for v in out.values()], {p.node_type: p.exec_type for p in request.get_profiling_info()}


@needs_kernel
@pytest.mark.parametrize("et", [Type.u8, Type.i8, Type.u4, Type.i4])
@pytest.mark.parametrize("group", [None, 64])
def test_openvino_pattern_runs_compressed(et, group):
    n, k, rows = 48, 256, 5
    x = Parameter(Type.f32, [1, rows, k])
    w, dense_w = openvino_weight(n, k, et, group, zero_point=et in (Type.u8, Type.u4))
    bias = RNG.standard_normal(n).astype(np.float32)
    model = Model([Add(MatMul(x, w, transpose_b=True), Constant(bias))], [x])
    data = RNG.standard_normal((1, rows, k)).astype(np.float32)
    want = data @ dense_w.T + bias
    bits = 4 if et in (Type.u4, Type.i4) else 8
    core = ov.Core()
    for dq, tol in ((0, 1e-4), (32, 0.02)):
        compiled = core.compile_model(model, "CPU", {**F32, "PERF_COUNT": True, "DYNAMIC_QUANTIZATION_GROUP_SIZE": dq})
        (got,), types = profile(compiled, [data])
        assert types["CompressedMatMul"] == f"compressed_matmul_int{bits}" + ("_dq" if dq else "")
        assert "Add" not in types  # the bias is the kernel's
        assert np.abs(got - want).max() <= tol * np.abs(want).max()
        assert compiled.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE") == dq
        # the compiled model holds the weight packed: no f32 constant of its size
        biggest = max(c.get_value().nbytes for c in compiled._impl.model.get_ordered_ops() if isinstance(c, Constant)
                      and c.get_output_element_type(0) == Type.f32)
        assert biggest < n * k


def test_accuracy_mode_turns_dynamic_quantization_off_unless_set():
    x = Parameter(Type.f32, [1, 64])
    w, _ = openvino_weight(16, 64, Type.u8, None, zero_point=True)
    model = Model([MatMul(x, w, transpose_b=True)], [x])
    core = ov.Core()
    assert core.compile_model(model, "CPU").get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE") == 32
    accurate = core.compile_model(model, "CPU", {"EXECUTION_MODE_HINT": "ACCURACY"})
    assert accurate.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE") == 0
    both = core.compile_model(model, "CPU", {"EXECUTION_MODE_HINT": "ACCURACY", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 64})
    assert both.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE") == 64


@pytest.mark.parametrize("et", [Type.u8, Type.i4])
def test_embedding_gather_stays_compressed(et):
    vocab, dim = 40, 64
    w, dense_w = openvino_weight(vocab, dim, et, None, zero_point=et == Type.u8)
    ids = Parameter(Type.i64, [2, 3])
    model = Model([Gather(w, ids, Constant(np.array(0, np.int64)))], [ids])
    data = np.array([[0, 5, 39], [-1, 7, 7]], np.int64)
    compiled = ov.Core().compile_model(model, "CPU", {**F32, "PERF_COUNT": True})
    (got,), types = profile(compiled, [data])
    assert types["CompressedGather"] == f"compressed_gather_int{4 if et == Type.i4 else 8}"
    np.testing.assert_allclose(got, dense_w[data], atol=1e-6)


def onnx_blocked_int4(k: int = 128, n: int = 24, block: int = 32, rows: int = 3) -> tuple[bytes, np.ndarray]:
    """x [rows, k] @ DequantizeLinear(int4 W [k, n], scale [k / block, n], zero point, axis 0, block_size) (opset
    21), and the dense W."""
    q = RNG.integers(-8, 8, (k, n))
    scale = RNG.uniform(0.01, 0.05, (k // block, n)).astype(np.float32)
    zp = RNG.integers(-2, 3, (k // block, n))
    inits = [helper.make_tensor("wq", TensorProto.INT4, [k, n], q.flatten().tolist()),
             numpy_helper.from_array(scale, "ws"),
             helper.make_tensor("wz", TensorProto.INT4, [k // block, n], zp.flatten().tolist())]
    nodes = [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0, block_size=block),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    graph = helper.make_graph(nodes, "blocked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, n])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    dense_w = (q - np.repeat(zp, block, 0)) * np.repeat(scale, block, 0)
    return model.SerializeToString(), dense_w.astype(np.float32)


@needs_kernel
def test_onnx_blocked_int4_dequantize_linear_runs_compressed():
    data, dense_w = onnx_blocked_int4()
    core = ov.Core()
    model = core.read_model(data)
    compiled = core.compile_model(model, "CPU", {**F32, "PERF_COUNT": True, "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0})
    x = RNG.standard_normal((3, 128)).astype(np.float32)
    (got,), types = profile(compiled, [x])
    assert types["CompressedMatMul"] == "compressed_matmul_int4"
    np.testing.assert_allclose(got, x @ dense_w, rtol=1e-4, atol=1e-4)


def test_patterns_the_kernels_do_not_take_are_folded_to_f32():
    # k = 6 is no whole number of the kernel's k steps: the weight is folded to f32 as before, and runs correctly
    x = Parameter(Type.f32, [2, 6])
    w, _ = openvino_weight(5, 6, Type.u8, None, zero_point=True)
    assert read_weight(w.output(0), 1) is None
    model = Model([MatMul(x, w, transpose_b=True)], [x])
    compiled = ov.Core().compile_model(model, "CPU", {**F32, "PERF_COUNT": True})
    data = RNG.standard_normal((2, 6)).astype(np.float32)
    (got,), types = profile(compiled, [data])
    assert "CompressedMatMul" not in types
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-5, atol=1e-5)  # f16 decompression


@pytest.mark.skipif(shutil.which((sysconfig.get_config_var("CC") or "cc").split()[0]) is None,
                    reason="no C compiler: the extension is optional")
def test_the_kernel_is_built():
    assert compressed_matmul.available(), "csrc/compressed_matmul.c was not built: see the install's output"
