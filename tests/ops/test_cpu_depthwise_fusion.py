"""DepthwiseFusion: a 1x1 convolution whose output only a 3x3 depthwise convolution reads runs as one oneDNN
primitive (the depthwise one as its ``dw`` post-op), where oneDNN fuses the pair for real.

The fused node must give what the two convolutions give apart, report the depthwise one as OPTIMIZED_OUT, and
leave alone every pair oneDNN's post-op cannot express.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vinerun as ov
from tests.ops._precision import F32
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Clamp, Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.plugins.cpu import depthwise_fusion
from vinerun.plugins.cpu.fused_ops import FusedConvolutionDW, conv_fusion
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels.conv_dw_dnnl import depthwise_post_op, fuses, pointwise_filters

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(5)
ONE = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}


def rand(shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def expand_depthwise(size=112, c_in=16, c_mid=96, stride=2, pads=(1, 1), kernel=3, dilation=1,
                     pw_stride=1, extra_reader=False) -> Model:
    """MobileNetV2's expansion: 1x1 conv + bias + ReLU6, 3x3 depthwise conv + bias + ReLU6, 1x1 projection."""
    x = Parameter(Type.f32, [1, c_in, size, size])
    pw_geometry = {**ONE, "strides": [pw_stride, pw_stride]}
    y = Convolution(x, Constant(rand([c_mid, c_in, 1, 1])), **pw_geometry)
    y = Clamp(Add(y, Constant(rand([1, c_mid, 1, 1]))), min=0.0, max=6.0)
    mid = y
    y = GroupConvolution(y, Constant(rand([c_mid, 1, 1, kernel, kernel])), strides=[stride, stride],
                         dilations=[dilation, dilation], pads_begin=[pads[0]] * 2, pads_end=[pads[1]] * 2,
                         name="depthwise")
    y = Clamp(Add(y, Constant(rand([1, c_mid, 1, 1]))), min=0.0, max=6.0)
    y = Convolution(y, Constant(rand([24, c_mid, 1, 1])), **ONE)
    outputs = [y, Relu(mid)] if extra_reader else [y]
    return Model(outputs, [x])


def compiled(model, config=F32):
    return ov.Core().compile_model(model, "CPU", config)


def fused_nodes(cm):
    return [n for n in cm._impl.model.get_ordered_ops() if isinstance(n, FusedConvolutionDW)]


def unfused_output(model, x, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(depthwise_fusion, "fuses", lambda *a: False)
        cm = compiled(model)
        assert not fused_nodes(cm)
        return cm.create_infer_request().infer({0: x})[0].copy()


def candidate_pair(model):
    """The (1x1, depthwise) FusedConvolution pair of ``model`` after the CPU's convolution fusion."""
    model = model.clone()
    conv_fusion()(model)
    convs = [n for n in model.get_ordered_ops() if n.type_name == "FusedConvolution"]
    return convs[0], convs[1]


def test_mobilenet_expansion_fuses_and_matches_the_two_convolutions(monkeypatch):
    model = expand_depthwise()
    pw, dw = candidate_pair(model)
    if not fuses(pw, dw, torch.get_num_threads()):
        pytest.skip("oneDNN does not fuse this pair on this CPU (its 1x1 output fits the L2 cache)")
    x = rand([1, 16, 112, 112], 1.0)
    cm = compiled(model, {**F32, "PERF_COUNT": "YES"})
    assert len(fused_nodes(cm)) == 1
    request = cm.create_infer_request()
    got = request.infer({0: x})[0].copy()
    np.testing.assert_allclose(got, unfused_output(model, x, monkeypatch), rtol=1e-5, atol=1e-5)
    info = {p.node_name: p for p in request.profiling_info}
    assert any(p.exec_type.startswith("onednn_conv2d_dw[") and p.status == p.Status.EXECUTED for p in info.values())
    assert info["depthwise"].status.name == "OPTIMIZED_OUT"
    # the native segment and the Python kernel agree (profiling runs node by node)
    np.testing.assert_array_equal(compiled(model).create_infer_request().infer({0: x})[0], got)


def test_odd_sizes_take_ceil_of_input_over_stride(monkeypatch):
    model = expand_depthwise(size=113)
    pw, dw = candidate_pair(model)
    assert depthwise_post_op(dw, dw.const_input) is not None  # 113 -> 57 = ceil(113 / 2)
    x = rand([1, 16, 113, 113], 1.0)
    got = compiled(model).create_infer_request().infer({0: x})[0]
    np.testing.assert_allclose(got, unfused_output(model, x, monkeypatch), rtol=1e-5, atol=1e-5)


def test_fused_node_evaluates_as_the_pair():
    model = expand_depthwise(size=20)
    pw, dw = candidate_pair(model)
    x = rand([1, 16, 20, 20], 1.0)
    fused = FusedConvolutionDW.from_pair(pw, dw)
    inputs = [x] + [fused.input_value(i).node.get_value() for i in range(1, fused.get_input_size())]
    want = dw.evaluate([pw.evaluate([x, *inputs[1:pw.get_input_size()]])[0],
                        *inputs[pw.get_input_size():]])[0]
    np.testing.assert_array_equal(fused.evaluate(inputs)[0], want)
    assert fused.get_output_partial_shape(0) == dw.get_output_partial_shape(0)
    assert [t for _, t in fused.fused_names].count("FusedConvolution") == 1


def test_fused_node_rejects_another_input_shape():
    pw, dw = candidate_pair(expand_depthwise(size=20))
    fused = FusedConvolutionDW.from_pair(pw, dw)
    with pytest.raises(ValidationError, match="made for input shape"):
        fused.clone_with_new_inputs([Parameter(Type.f32, [1, 16, 24, 24]).output(0),
                                     *fused.input_values()[1:]])


@pytest.mark.parametrize("change", [
    {"stride": 3},            # oneDNN's post-op strides are 1 or 2
    {"kernel": 5, "pads": (2, 2)},
    {"dilation": 2, "pads": (2, 2)},
    {"pads": (0, 0)},         # no padding before: not the post-op's geometry
    {"pads": (1, 0), "size": 21, "stride": 2},  # output 10, not ceil(21 / 2) = 11
])
def test_depthwise_convolutions_the_post_op_cannot_express_stay_apart(change):
    _, dw = candidate_pair(expand_depthwise(size=21 if "size" not in change else change.pop("size"), **change))
    assert depthwise_post_op(dw, dw.const_input) is None


def test_a_strided_pointwise_convolution_stays_apart():
    pw, _ = candidate_pair(expand_depthwise(size=20, pw_stride=2))
    assert pointwise_filters(pw, pw.const_input) is None


def test_a_pointwise_output_read_elsewhere_is_not_fused(monkeypatch):
    monkeypatch.setattr(depthwise_fusion, "fuses", lambda *a: True)  # only the graph's shape decides here
    cm = compiled(expand_depthwise(size=20, extra_reader=True))
    assert not fused_nodes(cm)
    cm = compiled(expand_depthwise(size=20))
    assert len(fused_nodes(cm)) == 1  # the same pair with one reader is (oneDNN's choice aside)


def test_bf16_compiles_and_runs_whatever_onednn_picks(monkeypatch):
    from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16

    if not mkldnn_bf16():
        pytest.skip("no bf16 oneDNN kernels on this CPU")
    model = expand_depthwise()
    x = rand([1, 16, 112, 112], 1.0)
    got = compiled(model, {"INFERENCE_PRECISION_HINT": "bf16"}).create_infer_request().infer({0: x})[0]
    want = unfused_output(model, x, monkeypatch)
    assert np.abs(got - want).max() <= 2 ** -5 * (want.max() - want.min())
