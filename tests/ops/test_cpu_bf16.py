"""bf16 on the CPU device: the precision pass (any CPU), the bf16 kernels against the reference (any CPU; they
fall back to PyTorch where oneDNN has no fast bf16 primitive), and compiled models under the default
precision (on CPUs with native bf16 only: elsewhere the default is f32 and nothing is lowered, as in OpenVINO).

The stated tolerance (:data:`vinerun.plugins.cpu.precision.BF16_TOLERANCE`, docs/properties.md): a bf16
result's largest error is within that fraction of the f32 result's largest magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import BF16, F32, bf16_kernel
from tests.ops.test_cpu_fusions import ACTS, check_fused, check_fused_matmul, conv_graph, matmul_graph
from tests.ops.test_cpu_fusions_transformer import SMALL, attention_graph, attention_inputs, check_against_reference
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.models.transformer import transformer_model
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.convert import Convert
from vinerun.ops.convolution import Convolution
from vinerun.ops.gather import Gather
from vinerun.ops.matmul import MatMul
from vinerun.ops.pooling import AvgPool, MaxPool
from vinerun.ops.reshape import Reshape
from vinerun.ops.shape_of import ShapeOf
from vinerun.ops.topk_unique import TopK
from vinerun.ops.unary_math import Erf
from vinerun.plugins.cpu import device_info
from vinerun.plugins.cpu.fused_ops import conv_fusion, matmul_fusion
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.precision import BF16_TOLERANCE, lower_precision

RNG = np.random.default_rng(3)
needs_bf16 = pytest.mark.skipif(not device_info.has_native_bf16(),
                                reason="no native bf16 on this CPU (AMX / AVX512-BF16): models compile in f32")
GEOMETRY = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}


def rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def close_bf16(got: np.ndarray, want: np.ndarray) -> None:
    """``got`` within the stated bf16 tolerance of ``want`` (relative to its largest magnitude)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= BF16_TOLERANCE * np.abs(want).max() + 1e-3


def cnn() -> Model:
    """conv + bias + ReLU -> MaxPool -> conv + bias + residual sum + ReLU -> global AvgPool -> flatten -> linear."""
    x = Parameter(np.float32, [1, 4, 12, 12], name="x")
    a = Relu(Add(Convolution(x, Constant(rand([8, 4, 3, 3])), **GEOMETRY), Constant(rand([1, 8, 1, 1]))))
    p = MaxPool(a, strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], kernel=[3, 3])
    c = Add(Convolution(p.output(0), Constant(rand([8, 8, 1, 1]) * 0.3), strides=[1, 1], dilations=[1, 1],
                        pads_begin=[0, 0], pads_end=[0, 0]), Constant(rand([1, 8, 1, 1])))
    r = Relu(Add(c, p.output(0)))
    g = AvgPool(r, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[6, 6])
    f = Reshape(g, Constant(np.array([1, 8], np.int64)), special_zero=False)
    y = Add(MatMul(f, Constant(rand([8, 5]))), Constant(rand([5])))
    y.output(0).set_names({"logits"})
    return Model([Result(y)], [x], "cnn")


def lowered(model: Model) -> Model:
    """``model`` after the CPU fusions and the bf16 pass (what a bf16 compile runs)."""
    conv_fusion()(model)
    matmul_fusion()(model)
    lower_precision(model, Type.bf16)
    return model


def types(model: Model) -> list[str]:
    return [n.type_name for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


def converts(model: Model) -> list[tuple[str, str]]:
    return [(n.get_input_element_type(0).get_type_name(), n.get_output_element_type(0).get_type_name())
            for n in model.get_ordered_ops() if n.type_name == "Convert"]


# --- the precision pass (any CPU) ---------------------------------------------------------------------------


def test_pass_converts_only_at_the_borders():
    model = lowered(cnn())
    assert converts(model) == [("f32", "bf16"), ("bf16", "f32")]
    for node in model.get_ordered_ops():
        if node.type_name in ("FusedConvolution", "FusedMatMul"):
            assert node.get_input_element_type(0) == Type.bf16 and node.get_input_element_type(1) == Type.bf16
            assert node.get_output_element_type(0) == Type.bf16
            bias = next(s.input_index for s in node.steps if s.kind == "bias")
            assert node.get_input_element_type(bias) == Type.f32  # biases stay wide
        if node.type_name in ("MaxPool", "AvgPool", "Reshape"):  # followers stay bf16 between the anchors
            assert node.get_output_element_type(0) == Type.bf16
    assert model.get_parameters()[0].get_element_type() == Type.f32
    assert model.output(0).get_element_type() == Type.f32 and model.output(0).get_names() == {"logits"}


def test_pass_leaves_f32_islands_and_converts_around_other_ops():
    x = Parameter(np.float32, [2, 6], name="x")
    alone = Model([Result(Erf(Add(x, Constant(rand([6])))))], [x])
    lower_precision(alone, Type.bf16)
    assert converts(alone) == []  # no anchor: nothing to lower
    y = Add(Erf(MatMul(x, Constant(rand([6, 6])))), x)  # Erf is no follower: f32 after the MatMul
    model = Model([Result(y)], [x])
    lower_precision(model, Type.bf16)
    assert converts(model) == [("f32", "bf16"), ("bf16", "f32")]
    assert y.get_output_element_type(0) == Type.f32


def test_pass_shares_one_convert_per_value_and_lets_shapes_through():
    x = Parameter(np.float32, [1, 8, 5, 5], name="x")
    conv = Convolution(x, Constant(rand([8, 8, 3, 3])), **GEOMETRY)
    conv.output(0).set_names({"features"})
    model = Model([Result(conv), Result(Erf(conv)), Result(ShapeOf(conv))], [x])
    lower_precision(model, Type.bf16)
    assert converts(model) == [("f32", "bf16"), ("bf16", "f32")]  # one Convert back for the Result and Erf
    assert model.output(0).get_names() == {"features"} and model.output(0).get_element_type() == Type.f32
    shape_of = [n for n in model.get_ordered_ops() if n.type_name == "ShapeOf"][0]
    assert shape_of.get_input_element_type(0) == Type.bf16  # reads only the shape: no Convert


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_pass_keeps_other_float_types(dtype):
    x = Parameter(dtype, [1, 8, 5, 5], name="x")
    model = Model([Result(Convolution(x, Constant(rand([8, 8, 3, 3], dtype)), **GEOMETRY))], [x])
    lower_precision(model, Type.bf16)
    assert converts(model) == [] and model.output(0).get_element_type() == Type(dtype)


def test_lowered_graph_runs_on_any_cpu():
    """The lowered graph's kernels (oneDNN bf16 or their PyTorch fallbacks) stay within the bf16 tolerance."""
    from vinerun.plugins.cpu.plan import Plan

    model, x = cnn(), rand([1, 4, 12, 12])
    want = run_reference(model, [x])[0]
    got = Plan(lowered(model)).run([x])[0]
    assert got.dtype == np.float32
    close_bf16(got, want)


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_pytorch_paths_without_the_direct_binding(monkeypatch, precision):
    """Without ``onednn-cpu-gomp`` every layer takes its PyTorch path: same values, C-contiguous outputs."""
    from vinerun.plugins.cpu.kernels import attention_dnnl, conv_dnnl, convert_dnnl, matmul_dnnl, pool_dnnl
    from vinerun.plugins.cpu.plan import Plan

    for module in (attention_dnnl, conv_dnnl, convert_dnnl, matmul_dnnl, pool_dnnl):
        monkeypatch.setattr(module, "library", lambda: None)
    model, x = cnn(), rand([1, 4, 12, 12])
    want = run_reference(model, [x])[0]
    if precision == "bf16":
        plan = Plan(lowered(model))
        close_bf16(plan.run([x])[0], want)
    else:
        conv_fusion()(model)
        matmul_fusion()(model)
        plan = Plan(model)
        np.testing.assert_allclose(plan.run([x])[0], want, rtol=1e-4, atol=1e-4)
    assert not any(s.kernel.impl for s in plan.steps)  # the direct binding's kernels name their impl
    feature_map = [s for s in plan.steps if s.node.type_name == "MaxPool"][0].node.input_value(0).node
    results = Model([Result(feature_map)], model.get_parameters())
    assert Plan(results).run([x])[0].flags.c_contiguous  # a model output never leaves channels-last


# --- bf16 kernels on bf16 models (any CPU) ------------------------------------------------------------------


@pytest.mark.parametrize("act", sorted(ACTS))
def test_conv_activations_bf16(act):
    check_fused(conv_graph(BF16, act=act, residual=True), BF16)


@pytest.mark.parametrize("act", sorted(ACTS))
def test_matmul_activations_bf16(act):
    name = ACTS[act](Parameter(np.float32, [1])).type_name.lower()
    want = bf16_kernel("onednn_matmul", "onednn_linear", "aten_matmul_fused")
    check_fused_matmul(matmul_graph(BF16, act=act), BF16, kinds=f"bias,{name}", exec_type=want + "_bf16")


@pytest.mark.parametrize("mask", [None, "full", "row"])
@pytest.mark.parametrize("split", [True, False])
def test_attention_bf16(mask, split):
    model = attention_graph(BF16, mask=mask, split=split, merge=split)
    check_against_reference(model, attention_inputs(model, BF16), BF16)


@pytest.mark.parametrize("kind", ["max", "avg_include", "avg_exclude", "global"])
@pytest.mark.parametrize("source", ["conv", "input"])
def test_pooling_bf16(kind, source):
    x = Parameter(BF16, [1, 8, 9, 9], name="x")
    v = Relu(Convolution(x, Constant(rand([8, 8, 3, 3], BF16)), **GEOMETRY)).output(0) if source == "conv" else x
    window = {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "kernel": [3, 3]}
    if kind == "max":
        pool = MaxPool(v, dilations=[1, 1], **window)
    elif kind == "global":
        pool = AvgPool(v, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[9, 9])
    else:
        pool = AvgPool(v, exclude_pad=kind == "avg_exclude", **window)
    model = Model([Result(pool.output(0))], [x])
    inputs = [rand([1, 8, 9, 9], BF16)]
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer(inputs)[0]
    want = run_reference(model, inputs)[0]
    assert got.dtype == BF16 and got.flags.c_contiguous
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)


def test_convert_to_bf16_feeds_a_convolution_channels_last():
    x = Parameter(np.float32, [1, 3, 10, 10], name="x")
    y = Convolution(Convert(x, destination_type=Type.bf16), Constant(rand([8, 3, 3, 3], BF16)), **GEOMETRY)
    model = Model([Result(Convert(y, destination_type=Type.f32))], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    inputs = [rand([1, 3, 10, 10])]
    got = compiled.create_infer_request().infer(inputs)[0]
    np.testing.assert_allclose(got, run_reference(model, inputs)[0], rtol=2e-2, atol=5e-2)
    if library() is not None:  # one pass: the conversion and the transposition (the C kernel where it is built)
        assert compiled._impl.plan.steps[0].kernel.exec_type in ("onednn_reorder_bf16", "c_convert_bf16")


@pytest.mark.skipif(library() is None, reason="oneDNN's C API is not installed")
def test_a_bf16_resize_hands_channels_last_to_the_f32_output_convert(monkeypatch):
    """A bf16 segmentation head (convolution, bilinear resize to the image size, Convert to the f32 output): the
    resize stays channels-last (oneDNN's NCHW resampling is ~10x slower) and the Convert's reorder reads it as it
    is; the Python steps give the same bits."""
    from vinerun.ops.interpolate import Interpolate

    x = Parameter(Type.bf16, [1, 8, 7, 7], name="x")
    y = Relu(Convolution(x, Constant(rand([21, 8, 3, 3], BF16)), **GEOMETRY))
    resized = Interpolate(y, Constant(np.array([56, 56], np.int64)), Constant(np.array([2, 3], np.int64)),
                          mode="linear_onnx", shape_calculation_mode="sizes",
                          coordinate_transformation_mode="half_pixel")
    model = Model([Result(Convert(resized, destination_type=Type.f32))], [x])
    data = rand([1, 8, 7, 7], BF16)
    plan = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    got = plan.run([data])[0]
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=2e-2, atol=2e-2)
    (seg,) = plan.items
    natives = {s.node.type_name: n for s, n in zip(seg.steps, seg.natives, strict=True)}
    resized_layout = natives["Interpolate"].buffers[-1].layout
    assert resized_layout[1][1] == 2  # channels innermost: a bf16 channel's stride
    assert natives["Convert"].buffers[0].layout == resized_layout
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")
    python = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    np.testing.assert_array_equal(python.run([data])[0], got)


# --- compiled models under the default precision (native bf16 CPUs) -------------------------------------------


@needs_bf16
def test_default_precision_computes_in_bf16():
    model, x = cnn(), rand([1, 4, 12, 12])
    compiled = ov.Core().compile_model(model, "CPU")
    assert compiled.get_property("INFERENCE_PRECISION_HINT") == Type.bf16
    heavy = [s.kernel.exec_type for s in compiled._impl.plan.steps if s.node.type_name.startswith("Fused")]
    assert heavy and all(t.endswith("_bf16") for t in heavy)
    got = compiled.create_infer_request().infer([x])[0]
    f32 = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([x])[0]
    assert got.dtype == np.float32 and compiled.output(0).get_element_type() == Type.f32
    close_bf16(got, run_reference(model, [x])[0])
    assert not np.array_equal(got, f32)  # really computed in bf16: rounding shows


@needs_bf16
@pytest.mark.parametrize("config", [F32, {"EXECUTION_MODE_HINT": "ACCURACY"}])
def test_f32_hint_and_accuracy_mode_stay_f32(config):
    model, x = cnn(), rand([1, 4, 12, 12])
    compiled = ov.Core().compile_model(model, "CPU", config)
    assert not any("bf16" in s.kernel.exec_type for s in compiled._impl.plan.steps)
    assert "Convert" not in types(compiled.get_runtime_model())
    got = compiled.create_infer_request().infer([x])[0]
    np.testing.assert_allclose(got, run_reference(model, [x])[0], rtol=1e-4, atol=1e-4)


@needs_bf16
def test_encoder_in_bf16():
    model = transformer_model(SMALL)
    x = rand([1, 8, 16])
    compiled = ov.Core().compile_model(model, "CPU", {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    got = request.infer([x])[0]
    close_bf16(got, run_reference(model, [x])[0])
    executed = {(p.node_type, p.exec_type) for p in request.get_profiling_info() if p.status == p.Status.EXECUTED}
    fused = {t for t in executed if t[0].startswith("Fused")}
    assert {t[0] for t in fused} == {"FusedMatMul", "FusedAttention", "FusedLayerNorm"}
    assert all(t[1].endswith("_bf16") for t in fused)  # profiling reports the exec precision
    assert {t[0] for t in executed} - {t[0] for t in fused} == {"Convert"}  # f32 in, f32 out


@needs_bf16
def test_integer_parts_stay_exact():
    """Gather by int indices, a bf16 MatMul, TopK indices and ShapeOf: the ints match the f32 compile."""
    ids = Parameter(np.int64, [2, 3], name="ids")
    table = Constant(rand([10, 8]))
    h = Add(MatMul(Gather(table, ids, Constant(np.array(0, np.int64))), Constant(rand([8, 6]))),
            Constant(np.array([0, 0, 8, 0, 0, 0], np.float32)))  # column 2 wins by a wide margin
    top = TopK(h, Constant(np.array(1, np.int64)), axis=-1, mode="max", sort="value", index_element_type="i32")
    model = Model([Result(h), Result(top.output(1)), Result(ShapeOf(h))], [ids])
    feed = [np.array([[1, 4, 9], [0, 0, 7]], np.int64)]
    got = ov.Core().compile_model(model, "CPU").create_infer_request().infer(feed)
    want = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer(feed)
    close_bf16(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    assert got[1].dtype == np.int32 and got[2].dtype == np.int64


@needs_bf16
def test_state_variables_stay_f32():
    from vinerun import opset13 as ops
    from vinerun.op.util import Variable, VariableInfo

    x = ops.parameter([1, 8], ov.Type.f32, name="x")
    var = Variable(VariableInfo([1, 8], ov.Type.f32, "h"))
    new = ops.tanh(ops.add(ops.matmul(ops.read_value(var), ops.constant(rand([8, 8]) * 0.3), False, False), x))
    model = ov.Model([ops.result(new)], [ops.assign(new, var)], [x], "rnn")
    bf16, f32 = (ov.Core().compile_model(model, "CPU", c).create_infer_request() for c in ({}, F32))
    for _ in range(5):
        xv = rand([1, 8])
        close_bf16(bf16.infer([xv])[0], f32.infer([xv])[0])
    state = bf16.query_state()[0].state.data
    assert state.dtype == np.float32
    close_bf16(state, f32.query_state()[0].state.data)


@needs_bf16
def test_silero_vad_runs_in_bf16():
    """A real stateful model (LSTM state through inputs/outputs), compiled with the default precision."""
    silero_vad = pytest.importorskip("silero_vad")
    ort = pytest.importorskip("onnxruntime")
    from pathlib import Path

    from tests.models.test_silero_vad import synthetic_audio

    path = str(Path(silero_vad.__file__).parent / "data" / "silero_vad_16k_op15.onnx")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    compiled = ov.Core().compile_model(path, "CPU")
    assert any(s.kernel.exec_type.endswith("_bf16") for s in compiled._impl.plan.steps)
    request = compiled.create_infer_request()
    audio = synthetic_audio(12 * 512 / 16000, 16000)
    state_ref = state = np.zeros((2, 1, 128), np.float32)
    ctx = np.zeros((1, 64), np.float32)
    for i in range(12):
        x = np.concatenate([ctx, audio[None, i * 512:(i + 1) * 512]], axis=1)
        feed = {"input": x, "sr": np.array(16000, np.int64)}
        want, state_ref = session.run(None, {**feed, "state": state_ref})
        result = request.infer({**feed, "state": state})
        got, state = result["output"], result["stateN"]
        assert got.dtype == state.dtype == np.float32
        assert abs(float(got.reshape(-1)[0]) - float(want.reshape(-1)[0])) < 0.05  # openvino bf16: 0.024
        ctx = x[:, -64:]


@needs_bf16
def test_cache_keeps_precisions_apart(tmp_path):
    model = cnn()
    x = rand([1, 4, 12, 12])
    outs = {}
    for _ in range(2):
        for name, config in (("bf16", {}), ("f32", F32)):
            compiled = ov.Core().compile_model(model, "CPU", {**config, "CACHE_DIR": str(tmp_path)})
            assert compiled.get_property("INFERENCE_PRECISION_HINT") == Type(name)
            outs.setdefault(name, []).append(compiled.create_infer_request().infer([x])[0])
    assert len(list(tmp_path.glob("*.blob"))) == 2
    for first, again in outs.values():
        np.testing.assert_array_equal(first, again)  # the cached blob compiles to the same precision
    assert not np.array_equal(outs["bf16"][0], outs["f32"][0])


@needs_bf16
def test_channel_slices_shuffles_and_hard_sigmoid_stay_bf16():
    """ShuffleNet's Slice and ShuffleChannels and MobileNetV3's HardSigmoid between bf16 convolutions compute in
    bf16: no Convert to f32 and back around them."""
    from vinerun.ops.activations import HardSigmoid
    from vinerun.ops.shuffle_channels import ShuffleChannels
    from vinerun.ops.slicing import Slice

    def i64(*v):
        return Constant(np.array(v, np.int64))

    geometry = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}
    x = Parameter(Type.f32, [1, 16, 6, 6])
    y = Relu(Convolution(x, Constant(rand([16, 16, 1, 1])), **geometry))
    y = ShuffleChannels(y, axis=1, group=2)
    half = Slice(y, i64(8), i64(16), i64(1), i64(1))
    gate = HardSigmoid(Convolution(half, Constant(rand([8, 8, 1, 1])), **geometry), Constant(np.float32(1 / 6)),
                       Constant(np.float32(0.5)))
    out = Convolution(gate, Constant(rand([8, 8, 1, 1])), **geometry)
    model = Model([out], [x])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    data = rand([1, 16, 6, 6])
    close_bf16(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0])
    types = {n.type_name: n.get_output_element_type(0).get_type_name()
             for n in compiled.get_runtime_model().get_ordered_ops()}
    assert types["ShuffleChannels"] == types["Slice"] == types["HardSigmoid"] == "bf16"
    converts = [n for n in compiled.get_runtime_model().get_ordered_ops() if n.type_name == "Convert"]
    assert len(converts) == 2  # the model input to bf16, the output back to f32


def test_profiling_names_the_onednn_implementation():
    """Profiling shows which oneDNN implementation a layer runs (``amx`` on an AMX CPU), before the precision."""
    from vinerun.plugins.cpu.kernels import Kernel, profiled_exec_type

    assert profiled_exec_type(Kernel(lambda x: x, "onednn_conv2d_bf16", impl="brg:avx512_core_amx")) == \
        "onednn_conv2d[brg:avx512_core_amx]_bf16"
    assert profiled_exec_type(Kernel(lambda x: x, "onednn_conv2d_sum_int8", impl="brgconv:avx512_core_vnni")) == \
        "onednn_conv2d_sum[brgconv:avx512_core_vnni]_int8"
    assert profiled_exec_type(Kernel(lambda x: x, "aten_add")) == "aten_add"
    if library() is None:
        pytest.skip("onednn-cpu-gomp is not installed")
    compiled = ov.Core().compile_model(cnn(), "CPU", {"PERF_COUNT": True, "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    request.infer([rand([1, 4, 12, 12])])
    convs = [p.exec_type for p in request.get_profiling_info() if p.node_type.endswith("Convolution")]
    assert convs and all(t.startswith("onednn_conv2d") and "[" in t for t in convs), convs


@needs_bf16
@pytest.mark.skipif(library() is None, reason="needs the oneDNN binding")
@pytest.mark.parametrize(("size", "strides"), [(14, (1, 1)), (15, (2, 2))])
def test_a_bf16_depthwise_convolution_with_bias_and_clamp(size, strides):
    """On an AMX CPU oneDNN's brdgmm_dw runs it (its bias then a binary post-op: that kernel takes no f32 bias with
    bf16 data), elsewhere jit_dw; either within the bf16 tolerance of the f32 reference."""
    model = conv_graph(c_in=24, c_out=24, size=size, groups=24, strides=strides, act="clamp")
    x = rand([1, 24, size, size])
    want = run_reference(model, [x])[0]
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16", "PERF_COUNT": True})
    request = compiled.create_infer_request()
    close_bf16(request.infer([x])[0], want)
    exec_type = next(p.exec_type for p in request.get_profiling_info() if p.node_type == "FusedConvolution")
    expected = "brdgmm_dw:" if device_info.has_amx_bf16() else "jit_dw:"
    assert exec_type.startswith(f"onednn_conv2d[{expected}"), exec_type
