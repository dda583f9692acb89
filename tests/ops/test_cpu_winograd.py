"""Winograd F(4x4, 3x3) convolution on the CPU: which convolutions take it, and that they give what the NumPy
reference gives (border tiles, channel tails, batches, every epilogue), natively and from Python, on concurrent
streams, and never under EXECUTION_MODE_HINT=ACCURACY or in bf16.
"""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Clamp, Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.transpose import Transpose
from vinerun.plugins.cpu import device_info
from vinerun.plugins.cpu.kernels import _ckernel, conv_winograd
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.winograd_selection import WinogradSelection

pytestmark = pytest.mark.skipif(library() is None or not conv_winograd.available(),
                                reason="needs the oneDNN binding and the C kernels (a C compiler at install)")
RNG = np.random.default_rng(11)


def rand(shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def conv_block(n=1, c=64, k=64, h=56, w=56, bias=True, act="relu", residual=False, strides=(1, 1),
               dilations=(1, 1), pads=(1, 1), kernel=3, tail=False) -> Model:
    """Convolution (+ bias) (+ activation) (+ residual sum + ReLU): what the CPU fuses into one node; ``tail``
    transposes its output to NHWC (a convolution as the model's output has no native form: the transposition of
    its channels-last output, a dense copy, keeps it in one segment)."""
    x = Parameter(Type.f32, [n, c, h, w])
    source = block_input = x
    if residual:  # as in a ResNet block: the residual is a channels-last value made before the convolution's input
        block_input = pointwise(x, c)
        source = pointwise(block_input, c)
    y = Convolution(source, Constant(rand([k, c, kernel, kernel], 1.0 / np.sqrt(9 * c))), strides=list(strides),
                    dilations=list(dilations), pads_begin=list(pads), pads_end=list(pads))
    if bias:
        y = Add(y, Constant(rand([1, k, 1, 1])))
    if act == "relu":
        y = Relu(y)
    elif act == "clamp":
        y = Clamp(y, min=-0.5, max=1.5)
    if residual:  # channels must match
        y = Relu(Add(y, block_input))
    if tail:
        y = Transpose(y, Constant(np.array([0, 2, 3, 1], np.int64)))
    return Model([y], [x])


def pointwise(x, channels):
    """ReLU(1x1 convolution)."""
    return Relu(Convolution(x, Constant(rand([channels, channels, 1, 1], 0.3)), strides=[1, 1], dilations=[1, 1],
                            pads_begin=[0, 0], pads_end=[0, 0]))


def compiled(model, config=F32):
    return ov.Core().compile_model(model, "CPU", config)


def exec_types(cm):
    """The exec types of the plan's steps, but the tail's."""
    return [s.kernel.exec_type for s in cm._impl.plan.steps if s.node.type_name != "Transpose"]


def assert_close_to_reference(model, x, got):
    ref = run_reference(model, [x])[0]
    # Winograd's rounding: a few f32 ulps of the output's range per input channel (measured 3-5e-5 on range 6)
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=0, atol=5e-5 * scale)


@pytest.fixture
def always_pays(monkeypatch):
    """Small shapes would keep the direct convolution (see ``pays``): force the Winograd one."""
    monkeypatch.setattr(conv_winograd, "pays", lambda *_: True)


def test_transformed_filters_are_g_g_gt():
    w = rand([5, 3, 3, 3])
    u = conv_winograd.transformed_filters(w)
    G = conv_winograd.G
    for k in range(5):
        for c in range(3):
            np.testing.assert_allclose(u[:, c, k].reshape(6, 6), G @ w[k, c].astype(np.float64) @ G.T, atol=1e-6)


def test_the_transforms_compute_a_3x3_correlation():
    """The F(4x4, 3x3) matrices themselves: a 6x6 tile and a 3x3 filter give the 4x4 valid correlation."""
    d, g = rand([6, 6]).astype(np.float64), rand([3, 3]).astype(np.float64)
    BT, G, AT = conv_winograd.BT, conv_winograd.G, conv_winograd.AT
    y = AT @ ((G @ g @ G.T) * (BT @ d @ BT.T)) @ AT.T
    want = [[np.sum(d[i:i + 3, j:j + 3] * g) for j in range(4)] for i in range(4)]
    np.testing.assert_allclose(y, want, atol=1e-12)


def test_resnet_3x3_layer_runs_winograd_and_matches_the_reference(monkeypatch):
    model = conv_block(tail=True)
    cm = compiled(model)
    assert exec_types(cm) == ["winograd_conv2d"]
    assert [n.algorithm for n in cm._impl.model.get_ordered_ops() if n.type_name == "FusedConvolution"] == ["winograd"]
    x = rand([1, 64, 56, 56])
    seg, got = check_one_segment(model, x, monkeypatch, "FusedConvolution", tolerance=5e-4)
    assert_close_to_reference(model, x, got)


@pytest.mark.parametrize("n,c,k,h,w", [(1, 24, 40, 13, 11), (2, 17, 33, 9, 6), (1, 16, 16, 4, 4), (1, 3, 5, 1, 7),
                                       (3, 64, 80, 5, 14)])
@pytest.mark.parametrize("act", ["relu", "clamp", None])
def test_border_tiles_channel_tails_and_batches(always_pays, monkeypatch, n, c, k, h, w, act):
    model = conv_block(n, c, k, h, w, act=act, tail=True)
    assert exec_types(compiled(model)) == ["winograd_conv2d"]
    x = rand([n, c, h, w])
    _, got = check_one_segment(model, x, monkeypatch, "FusedConvolution", tolerance=5e-4)
    assert_close_to_reference(model, x, got)


@pytest.mark.parametrize("act", ["relu", None])
def test_residual_sum_in_the_epilogue(always_pays, monkeypatch, act):
    model = conv_block(1, 32, 32, 10, 15, act=act, residual=True, tail=True)
    assert exec_types(compiled(model)) == ["onednn_conv2d", "onednn_conv2d", "winograd_conv2d_sum"]
    x = rand([1, 32, 10, 15])
    _, got = check_one_segment(model, x, monkeypatch, "FusedConvolution", tolerance=5e-4)
    assert_close_to_reference(model, x, got)


def test_without_bias(always_pays):
    model = conv_block(1, 20, 36, 9, 9, bias=False)
    cm = compiled(model)
    assert exec_types(cm) == ["winograd_conv2d"]
    x = rand([1, 20, 9, 9])
    assert_close_to_reference(model, x, cm.create_infer_request().infer({0: x})[0])


def test_nchw_and_strided_inputs_from_python(always_pays, monkeypatch):
    """The Python path copies a non-channels-last input first (the kernel reads channels-last only)."""
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")
    model = conv_block(1, 16, 16, 12, 12)
    cm = compiled(model)
    x = rand([1, 16, 12, 24])[..., ::2]  # strided
    assert_close_to_reference(model, np.ascontiguousarray(x), cm.create_infer_request().infer({0: x})[0])


@pytest.mark.parametrize("change", [{"strides": (2, 2)}, {"dilations": (2, 2), "pads": (2, 2)}, {"pads": (0, 0)},
                                    {"kernel": 5, "pads": (2, 2)}, {"kernel": 1, "pads": (0, 0)}])
def test_other_geometries_stay_direct(always_pays, change):
    model = conv_block(**change)
    assert exec_types(compiled(model)) == ["onednn_conv2d"]


def test_grouped_convolutions_stay_direct(always_pays):
    x = Parameter(Type.f32, [1, 64, 28, 28])
    y = GroupConvolution(x, Constant(rand([2, 32, 32, 3, 3])), strides=[1, 1], dilations=[1, 1], pads_begin=[1, 1],
                         pads_end=[1, 1])
    assert exec_types(compiled(Model([Relu(y)], [x]))) == ["onednn_conv2d"]


def test_accuracy_mode_and_bf16_keep_the_direct_convolution():
    model = conv_block()
    assert exec_types(compiled(model, {**F32, "EXECUTION_MODE_HINT": "ACCURACY"})) == ["onednn_conv2d"]
    if device_info.has_native_bf16():
        bf16 = compiled(model, {"INFERENCE_PRECISION_HINT": "bf16"})
        assert not any(t.startswith("winograd") for t in exec_types(bf16))


def test_accuracy_and_performance_agree_on_a_resnet_stage():
    """Three 3x3 layers in a row (ResNet-50's first stage): Winograd against the direct convolution."""
    x = Parameter(Type.f32, [1, 64, 56, 56])
    y = x
    for _ in range(3):
        y = Relu(Add(Convolution(y, Constant(rand([64, 64, 3, 3], 1 / 24)), strides=[1, 1], dilations=[1, 1],
                                 pads_begin=[1, 1], pads_end=[1, 1]), Constant(rand([1, 64, 1, 1], 0.1))))
    model = Model([y], [x])
    data = rand([1, 64, 56, 56])
    fast = compiled(model).create_infer_request().infer({0: data})[0]
    exact = compiled(model, {**F32, "EXECUTION_MODE_HINT": "ACCURACY"}).create_infer_request().infer({0: data})[0]
    assert np.abs(fast - exact).max() <= 1e-5 * max(1.0, float(np.abs(exact).max()))
    assert np.abs(fast - exact).max() > 0  # it did run another algorithm


@pytest.mark.parametrize("shape,out_channels,expected", [
    ((1, 64, 56, 56), 64, True), ((1, 128, 28, 28), 128, True), ((1, 256, 14, 14), 256, True),  # ResNet-50's
    ((1, 512, 7, 7), 512, False),  # transformed filters of 38 MB: out of cache
    ((1, 32, 56, 56), 32, False),  # too few channels for the transforms
    ((1, 64, 14, 14), 64, False),  # 16 tiles: 128 channels needed
    ((1, 128, 10, 10), 128, True), ((1, 128, 7, 7), 128, False),
])
def test_pays_where_measured(shape, out_channels, expected):
    assert conv_winograd.pays(shape, out_channels) is expected


def test_no_c_kernels_means_no_selection(monkeypatch):
    monkeypatch.setattr(_ckernel, "_ckernels", None)
    model = conv_block()
    assert exec_types(compiled(model)) == ["onednn_conv2d"]
    assert not WinogradSelection()(model.clone()).modified


def test_profiling_names_the_algorithm_and_the_matmul():
    cm = compiled(conv_block(), {**F32, "PERF_COUNT": True})
    request = cm.create_infer_request()
    request.infer({0: rand([1, 64, 56, 56])})
    (conv,) = [p for p in request.profiling_info if p.node_type == "FusedConvolution"]
    assert conv.exec_type.startswith("winograd_conv2d[winograd_f4x4_3x3+")  # the algorithm and the matmul's impl
    assert cm._impl.plan.steps[0].kernel.impl.startswith("winograd_f4x4_3x3+")


def test_concurrent_streams_each_get_their_own_scratch():
    """Two streams run Winograd layers of different sizes at once: each thread's scratch buffer is its own."""
    model = conv_block(1, 64, 64, 28, 28, residual=True)
    cm = compiled(model, {**F32, "PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": 2})
    inputs = [rand([1, 64, 28, 28]) for _ in range(8)]
    results = {}
    queue = ov.AsyncInferQueue(cm, 4)
    queue.set_callback(lambda request, i: results.__setitem__(i, request.get_output_tensor(0).data.copy()))
    for _ in range(3):
        for i, x in enumerate(inputs):
            queue.start_async({0: x}, i)
        queue.wait_all()
        for i, x in enumerate(inputs):
            assert_close_to_reference(model, x, results[i])
