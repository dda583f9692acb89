"""1-D convolutions of static shape on oneDNN (the 2-D primitive on the [N, C, 1, L] view): a chain of them in
one native segment, bit-equal to the same steps from Python; the geometry rewrites (dead taps dropped, an STFT
frame read as channels); the im2col kernel kept for dynamic lengths; bf16."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import BF16, F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu, Sigmoid, Tanh
from vinerun.ops.arithmetic import Add
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.slicing import Slice
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels.conv1d_dnnl import geometry

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(21)


def rand(shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def conv(x, out_c, in_c, k, stride=1, pad=1, bias=True, act=Relu):
    """A 1-D convolution (+ bias + activation, fused by the CPU passes)."""
    y = Convolution(x, Constant(rand([out_c, in_c, k], 1 / np.sqrt(in_c * k))), strides=[stride], dilations=[1],
                    pads_begin=[pad], pads_end=[pad])
    if bias:
        y = Add(y, Constant(rand([1, out_c, 1])))
    return act(y) if act is not None else y


def exec_types(compiled):
    return [s.kernel.exec_type for s in compiled._impl.plan.steps]


def stft_chain(length=640):
    """silero-vad's encoder in small: an STFT-like frame (1 channel, 256 taps, stride 128, no bias), then
    convolutions of 3 taps with bias and ReLU, two of stride 2, down to one output position."""
    x = Parameter(Type.f32, [1, 1, length])
    y = conv(x, 32, 1, 256, stride=128, pad=0, bias=False, act=None)
    y = conv(y, 16, 32, 3)
    y = conv(y, 16, 16, 3, stride=2)
    y = conv(y, 8, 16, 3, stride=2)
    return Model([y], [x])


def test_chain_runs_as_one_segment(monkeypatch):
    seg, got = check_one_segment(stft_chain(), rand([1, 1, 640]), monkeypatch, "FusedConvolution")
    assert [s.kernel.exec_type for s in seg.steps] == ["onednn_conv1d"] * 4
    assert all("gemm" not in s.kernel.impl for s in seg.steps)  # the frame too: read as channels
    assert all(n.key(2)[0] == 1 for n in seg.natives)  # problems this small run without a parallel region
    assert got.shape == (1, 8, 1)


def test_silero_encoder_shapes_take_direct_implementations():
    """silero-vad's five convolutions (16 kHz): each gets a direct oneDNN implementation."""
    x = Parameter(Type.f32, [1, 129, 4])
    y = conv(x, 128, 129, 3)
    y = conv(y, 64, 128, 3, stride=2)
    y = conv(y, 64, 64, 3, stride=2)
    y = conv(y, 128, 64, 3)
    y = conv(Relu(y), 1, 128, 1, pad=0, act=Sigmoid)
    model = Model([y], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    data = rand([1, 129, 4])
    got = compiled.create_infer_request().infer([data])[0]
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-4, atol=1e-4)
    steps = [s for s in compiled._impl.plan.steps if s.node.type_name == "FusedConvolution"]
    assert [s.kernel.exec_type for s in steps] == ["onednn_conv1d"] * 5
    assert all(not s.kernel.impl.startswith("ref") and "gemm" not in s.kernel.impl for s in steps)


@pytest.mark.parametrize(("k", "stride", "pads", "dilation", "length"), [
    (3, 1, (1, 1), 1, 1), (3, 2, (1, 1), 1, 2), (5, 1, (2, 1), 1, 3), (3, 1, (2, 2), 2, 2), (3, 3, (0, 2), 1, 7),
])
def test_dead_taps_are_dropped_and_the_result_holds(k, stride, pads, dilation, length):
    w = rand([4, 6, k])
    out_len = (length + sum(pads) - dilation * (k - 1) - 1) // stride + 1
    g = geometry(w, 1, (1, 6, length), out_len, stride, dilation, *pads)
    x = Parameter(Type.f32, [1, 6, length])
    node = Convolution(x, Constant(w), strides=[stride], dilations=[dilation], pads_begin=[pads[0]],
                       pads_end=[pads[1]])
    model = Model([node], [x])
    data = rand([1, 6, length])
    want = run_reference(model, [data])[0]
    # the rewritten problem, evaluated as a 2-D convolution by the reference, gives the same output
    x2 = Parameter(Type.f32, [1, 6, 1, length])
    conv2 = Convolution(x2, Constant(np.ascontiguousarray(g.w)), strides=[1, g.stride], dilations=[1, g.dilation],
                        pads_begin=[0, g.pads[0]], pads_end=[0, g.pads[1]])
    np.testing.assert_allclose(run_reference(Model([conv2], [x2]), [data[:, :, None]])[0][:, :, 0], want,
                               rtol=1e-5, atol=1e-5)
    assert g.w.shape[3] <= k
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([data])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_one_channel_frame_is_read_as_channels():
    g = geometry(rand([258, 1, 256]), 1, (1, 1, 640), 4, 128, 1, 0, 0)
    assert g.space_to_depth and g.src == (1, 128, 1, 5) and g.w.shape == (258, 128, 1, 2) and g.stride == 1


@pytest.mark.parametrize("length", [1, 4, 37])
def test_residual_sum_grouped_and_same_pads(length):
    x, r = Parameter(Type.f32, [2, 8, length]), Parameter(Type.f32, [2, 16, length])
    w = Constant(rand([4, 4, 2, 3]))  # 4 groups: 2 channels in, 4 out each
    y = GroupConvolution(x, w, strides=[1], dilations=[1], pads_begin=[0], pads_end=[0], auto_pad="same_upper")
    model = Model([Sigmoid(Add(Tanh(Add(y, Constant(rand([1, 16, 1])))), r))], [x, r])
    inputs = [rand([2, 8, length]), rand([2, 16, length])]
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer(inputs)[0]
    np.testing.assert_allclose(got, run_reference(model, inputs)[0], rtol=1e-4, atol=1e-4)
    assert got.flags.c_contiguous


def test_outputs_read_as_they_are_only_by_convolutions_and_views():
    """Channels-last between convolutions and into slices; C-contiguous to other readers (a model output)."""
    x = Parameter(Type.f32, [1, 16, 8])
    a = conv(x, 16, 16, 3)
    b = conv(a, 16, 16, 3)
    s = Slice(b, Constant(np.array([0], np.int64)), Constant(np.array([8], np.int64)),
              Constant(np.array([1], np.int64)), Constant(np.array([1], np.int64)))
    model = Model([b, Tanh(s)], [x])
    data = rand([1, 16, 8])
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([data])
    for i, want in enumerate(run_reference(model, [data])):
        np.testing.assert_allclose(got[i], want, rtol=1e-4, atol=1e-4)
    assert got[0].flags.c_contiguous


@pytest.mark.parametrize("length", [1, 4, 33])
def test_dynamic_lengths_keep_im2col(length):
    x = Parameter(Type.f32, [1, 6, -1])
    model = Model([conv(x, 5, 6, 3, stride=2)], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    data = rand([1, 6, length])
    got = compiled.create_infer_request().infer([data])[0]
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-4, atol=1e-4)
    assert exec_types(compiled) == ["im2col_conv1d"]


def test_bf16(monkeypatch):
    model, bf16 = stft_chain(), {"INFERENCE_PRECISION_HINT": "bf16"}
    compiled = ov.Core().compile_model(model, "CPU", bf16)
    convs = [s for s in compiled._impl.plan.steps if s.node.type_name in ("Convolution", "FusedConvolution")]
    if convs[0].node.get_input_element_type(0).to_dtype() != BF16:
        pytest.skip("no bf16 lowering on this CPU")
    assert all(s.kernel.exec_type.startswith("onednn_conv1d") for s in convs)
    data = rand([1, 1, 640])
    got = compiled.create_infer_request().infer([data])[0].astype(np.float32)
    want = run_reference(model, [data])[0]
    np.testing.assert_allclose(got, want, rtol=5e-2, atol=5e-2 * np.abs(want).max())
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")
    python = ov.Core().compile_model(model, "CPU", bf16).create_infer_request().infer([data])[0]
    np.testing.assert_array_equal(python.astype(np.float32), got)
