"""2-D transposed convolutions on oneDNN's deconvolution (kernels/deconv_dnnl.py) against the NumPy reference:
strides, dilations, pads, output padding, an output shape input with auto_pad, groups, bf16; in a native segment
between convolutions, with its bias Add."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.conv_backprop import ConvolutionBackpropData, GroupConvolutionBackpropData
from vinerun.ops.convolution import Convolution
from vinerun.plugins.cpu.kernels import select_kernel
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.native_segment import Segment

RNG = np.random.default_rng(9)
needs_onednn = pytest.mark.skipif(library() is None, reason="oneDNN's C library (onednn-cpu-gomp) is not installed")


def rand(shape: list[int]) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


CASES = [  # (C in, C out, kernel, attributes)
    (8, 4, 2, {"strides": [2, 2]}),
    (6, 5, 3, {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "output_padding": [1, 1]}),
    (4, 6, 3, {"strides": [1, 2], "pads_begin": [0, 1], "pads_end": [1, 0], "dilations": [2, 1]}),
    (5, 3, 4, {"strides": [3, 3], "pads_begin": [1, 2], "pads_end": [2, 1]}),
]


@needs_onednn
@pytest.mark.parametrize(("c_in", "c_out", "k", "attrs"), CASES)
def test_deconvolution_matches_the_reference(c_in, c_out, k, attrs):
    x = Parameter(Type.f32, [2, c_in, 5, 6])
    node = ConvolutionBackpropData(x, Constant(rand([c_in, c_out, k, k])), **attrs)
    assert select_kernel(node).exec_type == "onednn_deconv2d"
    model = Model([Relu(node)], [x])
    data = rand([2, c_in, 5, 6])
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([data])[0]
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-4, atol=1e-4)


@needs_onednn
@pytest.mark.parametrize("auto_pad", ["same_upper", "same_lower"])
def test_an_output_shape_input_sets_the_pads(auto_pad):
    x = Parameter(Type.f32, [1, 4, 5, 5])
    node = ConvolutionBackpropData(x, Constant(rand([4, 3, 3, 3])), Constant(np.array([10, 9], np.int64)),
                                   strides=[2, 2], auto_pad=auto_pad)
    model = Model([node], [x])
    data = rand([1, 4, 5, 5])
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([data])[0]
    assert got.shape == (1, 3, 10, 9)
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-4, atol=1e-4)


@needs_onednn
def test_grouped_deconvolution_matches_the_reference():
    x = Parameter(Type.f32, [1, 6, 4, 4])
    node = GroupConvolutionBackpropData(x, Constant(rand([3, 2, 4, 2, 2])), strides=[2, 2])
    assert select_kernel(node).exec_type == "onednn_deconv2d"
    model = Model([node], [x])
    data = rand([1, 6, 4, 4])
    got = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([data])[0]
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=1e-4, atol=1e-4)


@needs_onednn
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_a_unet_up_step_is_in_the_segment_between_convolutions(precision):
    """Convolution -> 2x2 stride-2 deconvolution + bias -> convolution, the deconvolution in the native segment
    (bf16 where the CPU has it: no Converts around it)."""
    from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16

    if precision == "bf16" and not mkldnn_bf16():
        pytest.skip("no native bf16 on this CPU")
    geometry = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    x = Parameter(Type.f32, [1, 16, 8, 8])
    y = Relu(Convolution(x, Constant(rand([16, 16, 3, 3]) * 0.2), **geometry))
    up = Add(ConvolutionBackpropData(y, Constant(rand([16, 8, 2, 2]) * 0.3), strides=[2, 2]),
             Constant(rand([1, 8, 1, 1])))
    out = Relu(Convolution(up, Constant(rand([8, 8, 3, 3]) * 0.2), **geometry))
    model = Model([out], [x])
    data = rand([1, 16, 8, 8])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision})
    want = run_reference(model, [data])[0]
    tol = 1e-4 if precision == "f32" else 2**-5 * np.abs(want).max()
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], want, rtol=tol, atol=tol)
    segments = [i for i in compiled._impl.plan.items if isinstance(i, Segment)]
    assert any("ConvolutionBackpropData" in [s.node.type_name for s in seg.steps] for seg in segments)
    steps = [i.node.type_name for i in compiled._impl.plan.items if not isinstance(i, Segment)]
    assert "ConvolutionBackpropData" not in steps
    deconv = next(s.node for s in compiled._impl.plan.steps if s.node.type_name == "ConvolutionBackpropData")
    assert deconv.get_output_element_type(0).get_type_name() == precision


@needs_onednn
def test_deconvolution_batchnorm_relu_deconvolution_stays_channels_last_in_one_segment():
    """PP-OCR det's head: ConvTranspose -> BatchNorm -> ReLU -> ConvTranspose. The BatchNorm + ReLU (one
    FusedScaleShift) hands the second deconvolution channels-last data (it reads that), so no layout change in
    between sends the scale-shift to the NumPy reference."""
    x = Parameter(Type.f32, [1, 8, 6, 6])
    up = ConvolutionBackpropData(x, Constant(rand([8, 6, 2, 2]) * 0.3), strides=[2, 2])
    normed = Relu(Add(Multiply(up, Constant(rand([1, 6, 1, 1]))), Constant(rand([1, 6, 1, 1]))))
    out = ConvolutionBackpropData(normed, Constant(rand([6, 3, 2, 2]) * 0.3), strides=[2, 2])
    model = Model([Relu(out)], [x])
    data = rand([1, 8, 6, 6])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0],
                               rtol=1e-4, atol=1e-4)
    outside = [i.node.type_name for i in compiled._impl.plan.items if not isinstance(i, Segment)]
    assert "FusedScaleShift" not in outside

