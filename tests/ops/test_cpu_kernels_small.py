"""The CPU kernels for small models: shape ops as views, Pad, the 1-D im2col convolution, small
element-wise ops in NumPy, If branches compiled into their own plans, and the direct oneDNN convolution.

Each runs on CPU in f32 and is compared with the graph's NumPy reference; the exec type shows which kernel ran.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Clamp, HSwish, Relu, Sigmoid, Tanh
from vinerun.ops.arithmetic import Add, Multiply, Power
from vinerun.ops.concat_split import Split, VariadicSplit
from vinerun.ops.control_flow import BodyOutputDescription, If, InvariantInputDescription
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.gather import Gather
from vinerun.ops.pad import Pad
from vinerun.ops.pooling import AvgPool
from vinerun.ops.reshape import Reshape, Squeeze, Unsqueeze
from vinerun.ops.slicing import Slice
from vinerun.ops.transpose import Transpose
from vinerun.plugins.cpu.device_info import cpu_flags
from vinerun.plugins.cpu.kernels import _dnnl, conv1d

RNG = np.random.default_rng(5)


def c(v, dtype=np.int64):
    return Constant(np.array(v, dtype))


def rand(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def compile_and_check(outputs, params, inputs, rtol=1e-5, atol=1e-5):
    """Compile on CPU, compare every output with the reference; return the compiled model's plan steps."""
    model = Model(outputs, params)
    want = run_reference(model, inputs)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(inputs)
    for i, w in enumerate(want):
        g = got[i]
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return compiled._impl.plan.steps


def exec_types(steps):
    return {s.node.type_name: s.kernel.exec_type for s in steps}


# --- views -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("make", "kind"), [
    (lambda x: Reshape(x, c([0, -1]), special_zero=True), "view_reshape"),
    (lambda x: Reshape(x, c([4, 6]), special_zero=False), "view_reshape"),
    (lambda x: Unsqueeze(x, c([-1, 0])), "view_unsqueeze"),
    (lambda x: Squeeze(Unsqueeze(x, c([1])), c([1])), "view_squeeze"),
    (lambda x: Slice(x, c([3, -1]), c([0, -100]), c([-1, -2]), c([1, 2])), "view_slice"),
    (lambda x: Gather(x, c(-1), c(1)), "view_gather"),
])
def test_views_match_the_reference(make, kind):
    x = Parameter(Type.f32, [2, 3, 4])
    node = make(x)
    steps = compile_and_check([node], [x], [rand([2, 3, 4])])
    assert exec_types(steps)[node.type_name] == kind


def test_splits_are_views():
    x = Parameter(Type.f32, [2, 6])
    s = Split(x, c(1), num_splits=3)
    v = VariadicSplit(x, c(-1), c([1, -1, 2]))
    steps = compile_and_check([s.output(i) for i in range(3)] + [v.output(i) for i in range(3)], [x], [rand([2, 6])])
    assert {st.kernel.exec_type for st in steps} == {"view_split"}


def test_gather_scalar_of_a_vector_is_zero_d_and_out_of_range_reads_zero():
    x = Parameter(Type.f32, [5])
    inside, outside = Gather(x, c(2), c(0)), Gather(x, c(7), c(0))
    steps = compile_and_check([inside, outside], [x], [rand([5])])
    assert {st.kernel.exec_type for st in steps} == {"view_gather"}


def test_squeeze_of_every_axis_gives_a_zero_d_array():
    x = Parameter(Type.f32, [1, 1])
    compile_and_check([Squeeze(x, c([0, 1]))], [x], [rand([1, 1])])


def test_bad_squeeze_raises_the_reference_error():
    x = Parameter(Type.f32, [1, -1])
    compiled = ov.Core().compile_model(Model([Squeeze(x, c([1]))], [x]), "CPU")
    with pytest.raises(Exception, match="squeeze"):
        compiled.create_infer_request().infer([rand([1, 3])])


def test_an_output_that_views_an_input_is_a_copy():
    x = Parameter(Type.f32, [2, 3])
    compiled = ov.Core().compile_model(Model([Reshape(x, c([3, 2]), special_zero=False)], [x]), "CPU")
    data = rand([2, 3])
    out = compiled.create_infer_request().infer([data])[0]
    assert not np.shares_memory(out, data)
    np.testing.assert_array_equal(out, data.reshape(3, 2))


# --- Pad ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "reflect", "symmetric", "edge"])
def test_pad_modes(mode):
    x = Parameter(Type.f32, [2, 5])
    node = Pad(x, c([1, 2]), c([0, 3]), Constant(np.float32(1.5)), pad_mode=mode)
    steps = compile_and_check([node], [x], [rand([2, 5])])
    assert exec_types(steps)["Pad"] == "numpy_pad"


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "symmetric"])
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_pad_of_large_images_takes_aten_where_it_has_the_mode(mode, layout):
    x = Parameter(Type.f32, [1, 16, 40, 40])
    source = x if layout == "nchw" else Transpose(Transpose(x, c([0, 2, 3, 1])), c([0, 3, 1, 2]))
    node = Pad(source, c([0, 0, 2, 1]), c([0, 0, 1, 3]), Constant(np.float32(-0.5)), pad_mode=mode)
    steps = compile_and_check([node], [x], [rand([1, 16, 40, 40])], rtol=0, atol=0)
    assert exec_types(steps)["Pad"] == ("numpy_pad" if mode == "symmetric" else "aten_pad")


@pytest.mark.parametrize(("begin", "end", "kind"), [
    ([1, 0, 0, 0], [0, 0, 0, 0], "numpy_pad"),    # reflect over the batch axis: ATen pads trailing axes only
    ([0, 0, 1, 1], [0, 0, 1, 1], "aten_pad"),
])
def test_reflect_pad_axes(begin, end, kind):
    x = Parameter(Type.f32, [2, 3, 5, 5])
    steps = compile_and_check([Pad(x, c(begin), c(end), pad_mode="reflect")], [x], [rand([2, 3, 5, 5])], 0, 0)
    assert exec_types(steps)["Pad"] == kind


def test_pad_of_integers_keeps_numpy_for_reflect_and_aten_for_large_constants():
    x = Parameter(Type.i32, [1, 16, 40, 40])
    data = RNG.integers(-9, 9, [1, 16, 40, 40]).astype(np.int32)
    reflect = compile_and_check([Pad(x, c([0, 0, 1, 1]), c([0, 0, 1, 1]), pad_mode="reflect")], [x], [data], 0, 0)
    assert exec_types(reflect)["Pad"] == "numpy_pad"
    const = compile_and_check([Pad(x, c([0, 0, 1, 1]), c([0, 0, 1, 1]), Constant(np.int32(7)))], [x], [data], 0, 0)
    assert exec_types(const)["Pad"] == "aten_pad"


def test_pad_too_wide_for_reflect_raises_the_reference_error():
    x = Parameter(Type.f32, [2, 2])
    compiled = ov.Core().compile_model(Model([Pad(x, c([0, 3]), c([0, 0]), pad_mode="reflect")], [x]), "CPU")
    with pytest.raises(Exception, match="too large"):
        compiled.create_infer_request().infer([rand([2, 2])])


# --- 1-D convolution as a matrix product --------------------------------------------------------------
@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [2]},
    {"dilations": [2], "pads_begin": [2], "pads_end": [2]},
    {"pads_begin": [0], "pads_end": [0]},
    {"pads_begin": [2], "pads_end": [0]},
    {"auto_pad": "same_upper", "strides": [2]},
])
@pytest.mark.parametrize("length", [1, 4, 33])
def test_conv1d_im2col(attrs, length):
    x = Parameter(Type.f32, [2, 6, -1])
    attrs = {"strides": [1], "dilations": [1], "pads_begin": [1], "pads_end": [1], **attrs}
    if attrs.get("auto_pad") is None and length + attrs["pads_begin"][0] + attrs["pads_end"][0] < \
            2 * attrs["dilations"][0] + 1:
        pytest.skip("the window is wider than the padded input (the reference refuses it)")
    conv = Convolution(x, Constant(rand([5, 6, 3])), **attrs)
    y = Relu(Add(conv, Constant(rand([1, 5, 1]))))
    steps = compile_and_check([y], [x], [rand([2, 6, length])])
    assert [s.kernel.exec_type for s in steps] == ["im2col_conv1d"]  # bias and ReLU fused into it


def test_conv1d_residual_and_post_activation():
    x = Parameter(Type.f32, [1, 4, 6])
    conv = Convolution(x, Constant(rand([4, 4, 3])), strides=[1], dilations=[1], pads_begin=[1], pads_end=[1])
    y = Sigmoid(Add(Tanh(conv), x))
    steps = compile_and_check([y], [x], [rand([1, 4, 6])])
    assert [s.kernel.exec_type for s in steps] == ["im2col_conv1d"]


def test_long_conv1d_falls_back_to_aten(monkeypatch):
    monkeypatch.setattr(conv1d, "MAX_ELEMENTS", 16)
    x = Parameter(Type.f32, [1, 3, -1])  # a dynamic length: im2col (a static one may run oneDNN)
    conv = Convolution(x, Constant(rand([2, 3, 5])), strides=[2], dilations=[1], pads_begin=[2], pads_end=[2])
    steps = compile_and_check([Relu(Add(conv, Constant(rand([1, 2, 1]))))], [x], [rand([1, 3, 20])])
    assert [s.kernel.exec_type for s in steps] == ["im2col_conv1d"]  # the kernel, taking its ATen branch


# --- small element-wise ops ----------------------------------------------------------------------------
@pytest.mark.parametrize("size", [3, 5000])
def test_small_and_large_elementwise_agree(size):
    a, b = Parameter(Type.f32, [size]), Parameter(Type.f32, [1])
    y = Relu(Multiply(Add(a, b), Power(a, Constant(np.float32(2)))))
    compile_and_check([Tanh(y), y], [a, b], [rand([size]), rand([1])])


# --- If: branches compiled with the outer constants ----------------------------------------------------
def _if_conv_model():
    cond, x = Parameter(Type.boolean, []), Parameter(Type.f32, [1, 3, 5])
    w, b = Constant(rand([4, 3, 3])), Constant(rand([1, 4, 1]))
    bodies = []
    for act in (Relu, Sigmoid):
        px, pw, pb = Parameter(Type.f32, [1, 3, 5]), Parameter(Type.f32, [4, 3, 3]), Parameter(Type.f32, [1, 4, 1])
        conv = Convolution(px, pw, strides=[1], dilations=[1], pads_begin=[1], pads_end=[1])
        bodies.append(Model([act(Add(conv, pb))], [px, pw, pb]))
    ins = tuple(InvariantInputDescription(i + 1, i) for i in range(3))
    node = If(cond, x, w, b, then_body=bodies[0], else_body=bodies[1], then_inputs=ins, else_inputs=ins,
              then_outputs=(BodyOutputDescription(0, 0),), else_outputs=(BodyOutputDescription(0, 0),))
    return [node.output(0)], [cond, x]


@pytest.mark.parametrize("taken", [True, False])
def test_if_branches_run_fused_plans(taken):
    outputs, params = _if_conv_model()
    steps = compile_and_check(outputs, params, [np.array(taken), rand([1, 3, 5])])
    step = [s for s in steps if s.node.type_name == "If"][0]
    assert step.kernel.exec_type == "plan_if"
    branches = [cell.cell_contents for cell in step.kernel.fn.__closure__
                if type(cell.cell_contents).__name__ == "_Branch"]
    for branch in branches:  # the weights became constants, so bias + activation fused into the conv
        assert [s.node.type_name for s in branch.plan.steps] == ["FusedConvolution"]


# --- direct oneDNN convolutions ------------------------------------------------------------------------
needs_dnnl = pytest.mark.skipif(_dnnl.library() is None, reason="onednn-cpu-gomp is not installed")


@needs_dnnl
@pytest.mark.parametrize(("groups", "stride", "act"), [(None, 1, Relu), (8, 2, None), (8, 1, "clamp"),
                                                        (None, 2, HSwish)])
def test_dnnl_convolution(groups, stride, act):
    x = Parameter(Type.f32, [1, 8, 9, 9])
    geometry = {"strides": [stride] * 2, "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    if groups:
        conv = GroupConvolution(x, Constant(rand([groups, 8 // groups, 8 // groups, 3, 3])), **geometry)
    else:
        conv = Convolution(x, Constant(rand([8, 8, 3, 3])), **geometry)
    y = Add(conv, Constant(rand([1, 8, 1, 1])))
    if act == "clamp":
        y = Clamp(y, min=0.0, max=6.0)
    elif act is not None:
        y = act(y)
    steps = compile_and_check([y], [x], [rand([1, 8, 9, 9])], rtol=1e-4, atol=1e-4)
    assert steps[0].kernel.exec_type == "onednn_conv2d" and steps[0].kernel.impl
    if groups and "avx2" in cpu_flags():  # depthwise: oneDNN's jit_dw, not its first choice (see Conv2d)
        assert steps[0].kernel.impl.startswith("jit_dw:")


@needs_dnnl
def test_dnnl_streams_run_concurrently_with_their_own_buffers():
    """Two streams of one thread each, eight requests in flight: each result matches its own input."""
    x = Parameter(Type.f32, [1, 8, 12, 12])
    w = Constant(rand([8, 8, 3, 3]))
    geometry = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    y = Relu(Convolution(Relu(Convolution(x, w, **geometry)), w, **geometry))
    model = Model([y], [x])
    compiled = ov.Core().compile_model(model, "CPU", {**F32, "NUM_STREAMS": 2, "INFERENCE_NUM_THREADS": 2})
    feeds = [rand([1, 8, 12, 12]) for _ in range(8)]
    results: dict[int, np.ndarray] = {}
    queue = ov.AsyncInferQueue(compiled, 4)
    queue.set_callback(lambda request, i: results.__setitem__(i, request.get_output_tensor(0).data.copy()))
    for i, feed in enumerate(feeds):
        queue.start_async([feed], i)
    queue.wait_all()
    for i, feed in enumerate(feeds):
        np.testing.assert_allclose(results[i], run_reference(model, [feed])[0], rtol=1e-4, atol=1e-4)


@needs_dnnl
def test_dnnl_objects_are_destroyed_with_the_layer():
    lib = _dnnl.library()
    conv = _dnnl.Conv2d(lib, rand([4, 4, 3, 3]), rand([4]), 1, (1, 4, 6, 6), (1, 4, 6, 6), [1, 1], [1, 1],
                        [1, 1], [1, 1], [("eltwise", _dnnl.ELTWISE["relu"], 0.0, 0.0)])
    x = np.ascontiguousarray(rand([1, 6, 6, 4]))
    y = np.empty((1, 6, 6, 4), np.float32)
    conv((1, True), x.ctypes.data, y.ctypes.data)
    owned = conv._owned
    assert owned and np.all(y >= 0)
    del conv
    gc.collect()
    assert owned == []


@needs_dnnl
@pytest.mark.parametrize("residual_read_later", [False, True])
def test_dnnl_sum_accumulates_into_a_dead_residual_only(residual_read_later):
    """conv(r) + r with r dead afterwards may reuse r's buffer; r read later keeps its values."""
    x = Parameter(Type.f32, [1, 8, 7, 7])
    geometry = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    r = Relu(Convolution(x, Constant(rand([8, 8, 3, 3])), **geometry))
    y = Relu(Add(Convolution(r, Constant(rand([8, 8, 3, 3])), **geometry), r))
    z = Convolution(y, Constant(rand([8, 8, 3, 3])), **geometry)
    out = Add(z, Relu(r)) if residual_read_later else z
    # outputs reach a few hundred after three convolutions: an element that cancels to ~0.2 is off by ~1e-4
    steps = compile_and_check([out], [x], [rand([1, 8, 7, 7])], rtol=1e-4, atol=1e-3)
    assert "onednn_conv2d_sum" in [s.kernel.exec_type for s in steps]


def test_avg_pool_reads_a_channels_last_convolution_output():
    x = Parameter(Type.f32, [1, 8, 7, 7])
    geometry = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    y = Relu(Convolution(x, Constant(rand([16, 8, 3, 3])), **geometry))
    pooled = AvgPool(y, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[7, 7])
    steps = compile_and_check([pooled], [x], [rand([1, 8, 7, 7])], rtol=1e-4, atol=1e-4)
    from vinerun.plugins.cpu.kernels._dnnl import library

    assert exec_types(steps)["AvgPool"] == ("onednn_avgpool" if library() is not None else "aten_avg_pool2d")


def test_gather_from_a_constant_table_reads_it_in_place(monkeypatch):
    # an embedding table: the kernel makes its tensor once at compile time; converting the (read-only)
    # constant per call copied all of it (milliseconds for a 30K x 384 vocabulary)
    from vinerun.plugins.cpu.kernels import movement

    table = rand([50, 8])
    ids = Parameter(Type.i64, [2, 3])
    compiled = ov.Core().compile_model(Model([Gather(Constant(table), ids, c(0))], [ids]), "CPU", F32)
    request = compiled.create_infer_request()
    real = movement.to_torch

    def no_table_copies(a):
        assert a.shape != table.shape, "the constant table was converted during inference"
        return real(a)

    monkeypatch.setattr(movement, "to_torch", no_table_copies)
    picked = np.array([[0, 49, -1], [3, 3, 7]], np.int64)
    np.testing.assert_array_equal(request.infer([picked])[0], table[picked])
    out_of_range = np.array([[0, 50, 1], [1, 2, 3]], np.int64)  # the reference's rule: zeros there
    np.testing.assert_array_equal(request.infer([out_of_range])[0][0, 1], np.zeros(8, np.float32))


@pytest.mark.parametrize("source", ["parameter", "convolution"])
@pytest.mark.parametrize(("attrs", "grouped"), [
    ({"strides": [2, 2], "pads_begin": [0, 0], "pads_end": [0, 0]}, False),
    ({"strides": [2, 2], "pads_begin": [1, 0], "pads_end": [0, 1], "output_padding": [1, 1]}, False),
    ({"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "dilations": [2, 1]}, True),
])
def test_transposed_convolution_on_channels_last_data(source, attrs, grouped):
    # 2-D transposed convolutions run oneDNN's deconvolution (deconv_dnnl), or ATen on channels-last data where an
    # output padding goes past the end pads: the same values whether the data arrives NCHW (a model input) or
    # channels-last (a convolution's output)
    from vinerun.ops.conv_backprop import ConvolutionBackpropData, GroupConvolutionBackpropData

    x = Parameter(Type.f32, [1, 4, 7, 6])
    data = x if source == "parameter" else Relu(Convolution(x, Constant(rand([4, 4, 3, 3])), strides=[1, 1],
                                                            dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1]))
    geometry = {"dilations": [1, 1], **attrs}
    if grouped:
        node = GroupConvolutionBackpropData(data, Constant(rand([2, 2, 3, 3, 3])), **geometry)
    else:
        node = ConvolutionBackpropData(data, Constant(rand([4, 5, 3, 3])), **geometry)
    steps = compile_and_check([Relu(node)], [x], [rand([1, 4, 7, 6])], rtol=1e-4, atol=1e-4)
    from vinerun.plugins.cpu.kernels._dnnl import library

    crops = any(p < o for p, o in zip(attrs["pads_end"], attrs.get("output_padding", [0, 0]), strict=True))
    expected = "aten_conv_transpose2d" if library() is None or crops else "onednn_deconv2d"
    assert exec_types(steps)[node.type_name] == expected


@pytest.mark.parametrize(("kind", "window"), [
    ("max", {"kernel": [508], "strides": [1], "pads_begin": [0], "pads_end": [0]}),  # a global pool over a sequence
    ("avg", {"kernel": [508], "strides": [1], "pads_begin": [0], "pads_end": [0]}),
    ("max", {"kernel": [3], "strides": [2], "pads_begin": [1], "pads_end": [1]}),
    ("avg", {"kernel": [4], "strides": [2], "pads_begin": [0], "pads_end": [1]}),
])
def test_one_dimensional_global_pooling_is_a_reduction(kind, window):
    # ATen's max_pool1d over a 508-wide window took 400 us for [1, 512, 508]; amax takes ~20
    from vinerun.ops.pooling import MaxPool

    x = Parameter(Type.f32, [1, 16, 512])
    y = Relu(Convolution(x, Constant(rand([32, 16, 5])), strides=[1], dilations=[1], pads_begin=[0], pads_end=[0]))
    pooled = (MaxPool(y, dilations=[1], **window) if kind == "max"
              else AvgPool(y, exclude_pad=True, **window))
    steps = compile_and_check([pooled.output(0)], [x], [rand([1, 16, 512])], rtol=1e-4, atol=1e-4)
    is_global = window["kernel"] == [508]
    expected = f"aten_global_{kind}_pool" if is_global else f"aten_{kind}_pool1d"
    assert exec_types(steps)[pooled.type_name] == expected


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64])
def test_dense_copy_makes_strided_arrays_c_contiguous(dtype):
    from vinerun.plugins.cpu.kernels._native import dense_copy

    channels_last = np.ascontiguousarray(rand([2, 5, 7, 3]).astype(dtype)).transpose(0, 3, 1, 2)
    copied = dense_copy(channels_last)
    assert copied.flags.c_contiguous and not np.shares_memory(copied, channels_last)
    np.testing.assert_array_equal(copied, channels_last)
    dense = np.ascontiguousarray(channels_last)
    assert dense_copy(dense) is dense
    reversed_rows = rand([4, 6])[:, ::-1]  # negative strides: NumPy's copy
    np.testing.assert_array_equal(dense_copy(reversed_rows), reversed_rows)


@pytest.mark.parametrize(("size", "out", "ctm", "mode", "direct"), [
    ((14, 14), (28, 28), "half_pixel", "sizes", True),
    ((28, 28), (224, 224), "half_pixel", "sizes", True),
    ((10, 9), (7, 13), "pytorch_half_pixel", "sizes", True),  # down along one axis, up along the other
    ((10, 9), (17, 13), "half_pixel", "scales", False),  # scales 1.7 / 1.5 that floor to another size than in * s
    ((10, 9), (20, 18), "align_corners", "sizes", False),
])
def test_bilinear_resize_on_onednn_where_it_computes_the_same(size, out, ctm, mode, direct):
    from vinerun.ops.interpolate import Interpolate
    from vinerun.plugins.cpu.kernels._dnnl import library

    x = Parameter(Type.f32, [1, 5, *size])
    target = (np.array(out, np.int64) if mode == "sizes"
              else np.array([1.7, 1.5], np.float32))
    node = Interpolate(x, Constant(target), c([2, 3]), mode="linear_onnx", shape_calculation_mode=mode,
                       coordinate_transformation_mode=ctm)
    steps = compile_and_check([node], [x], [rand([1, 5, *size])], rtol=1e-5, atol=1e-5)
    used = exec_types(steps)["Interpolate"]
    assert (used == "onednn_resample_linear") == (direct and library() is not None)


@pytest.mark.parametrize("mode", ["linear_onnx", "nearest"])
def test_a_resize_of_a_channels_last_convolution_into_a_model_output_stays_on_onednn(mode):
    """oneDNN has only its reference resampling from a channels-last source into a C-contiguous destination (95 ms
    for [1, 21, 28, 28] -> 224 x 224): the kernel makes the source C-contiguous first instead."""
    from vinerun.ops.interpolate import Interpolate
    from vinerun.plugins.cpu.kernels._dnnl import library

    x = Parameter(Type.f32, [1, 8, 7, 7])
    y = Relu(Convolution(x, Constant(rand([21, 8, 3, 3])), strides=[1, 1], dilations=[1, 1], pads_begin=[1, 1],
                         pads_end=[1, 1]))
    extra = {"nearest_mode": "floor", "coordinate_transformation_mode": "asymmetric"} if mode == "nearest" else {
        "coordinate_transformation_mode": "half_pixel"}
    node = Interpolate(y, Constant(np.array([56, 56], np.int64)), c([2, 3]), mode=mode, shape_calculation_mode="sizes",
                       **extra)
    model = Model([node], [x])
    data = rand([1, 8, 7, 7])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0],
                               rtol=1e-4, atol=1e-4)
    kernel = next(s.kernel for s in compiled._impl.plan.steps if s.node.type_name == "Interpolate")
    assert library() is None or kernel.exec_type.startswith("onednn_resample")
    channels_last = np.ascontiguousarray(rand([1, 7, 7, 21])).transpose(0, 3, 1, 2)
    want = node.evaluate([channels_last, np.array([56, 56], np.int64), np.array([2, 3], np.int64)])[0]
    np.testing.assert_allclose(kernel.fn([channels_last])[0], want, rtol=1e-5, atol=1e-5)
