"""Views with an offset inside native segments: Slice, Split / VariadicSplit, Gather of one index, Squeeze and
Unsqueeze of strided values read their input's memory in place (a byte offset into its buffer), in the arena,
in a segment input, and in a value handed back."""

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
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add, Multiply, Power
from vinerun.ops.concat_split import Split, VariadicSplit
from vinerun.ops.convert import Convert
from vinerun.ops.convolution import Convolution
from vinerun.ops.gather import Gather
from vinerun.ops.matmul import MatMul
from vinerun.ops.reshape import Squeeze, Unsqueeze
from vinerun.ops.slicing import Slice
from vinerun.ops.transpose import Transpose
from vinerun.ops.unary_math import Sqrt
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.native_segment import Segment

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(11)


def rand(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(*values):
    return Constant(np.array(values, np.int64))


def scale(x):
    """A native step making a C-contiguous value (a convolution would hand its slices channels-last)."""
    shape = (x.get_output_partial_shape(0) if hasattr(x, "get_output_partial_shape") else x.get_partial_shape())
    return Multiply(x, Constant(rand(list(shape.to_shape())[1:])))


def test_slices_stay_in_the_segment(monkeypatch):
    """Multiply -> two channel slices (the second at an offset) -> Add: one segment, no copies."""
    x = Parameter(Type.f32, [1, 16, 6, 6])
    y = scale(x)
    low = Slice(y, ints(0), ints(8), ints(1), ints(1))
    high = Slice(y, ints(8), ints(16), ints(1), ints(1))
    model = Model([Unsqueeze(Add(low, high), ints(0))], [x])
    seg, _ = check_one_segment(model, rand([1, 16, 6, 6]), monkeypatch, "Slice")
    assert [s.node.type_name for s in seg.steps].count("Slice") == 2


@pytest.mark.parametrize("variadic", [False, True])
def test_split_outputs_are_views_at_their_offsets(monkeypatch, variadic):
    x = Parameter(Type.f32, [1, 12, 5, 5])
    y = scale(x)
    parts = VariadicSplit(y, ints(1), ints(3, -1)) if variadic else Split(y, ints(1), num_splits=2)
    a, b = (parts.output(0), parts.output(1))
    a, b = (Slice(a, ints(0), ints(3), ints(1), ints(1)), Slice(b, ints(0), ints(3), ints(1), ints(1))) \
        if variadic else (a, b)
    # a channel split of a 4-D tensor runs as one Slice per part (transformations/channel_split.py)
    check_one_segment(Model([Unsqueeze(Multiply(a, b), ints(0))], [x]), rand([1, 12, 5, 5]), monkeypatch, "Slice")


def test_gather_of_a_segment_input_reads_it_at_an_offset(monkeypatch):
    """An LSTM state's second row (Gather index 1 of a [2, 1, 64] input) straight into a matrix product."""
    state = Parameter(Type.f32, [2, 1, 64])
    row = Gather(state, Constant(np.int64(1)), Constant(np.int64(0)))
    w = rand([64, 32])
    model = Model([Add(MatMul(row, Constant(w)), Constant(rand([32])))], [state])
    data = rand([2, 1, 64])
    seg, got = check_one_segment(model, data, monkeypatch, "Gather")
    np.testing.assert_allclose(got, data[1] @ w + model.get_results()[0].input_value(0).node.const_input(1),
                               rtol=1e-5, atol=1e-5)


def test_a_slice_handed_back_is_the_right_part_of_the_buffer():
    """The value after the segment is a view at an offset into the array the run handed out."""
    x = Parameter(Type.f32, [1, 16, 4, 4])
    y = scale(x)
    part = Slice(y, ints(5), ints(13), ints(2), ints(1))  # channels 5, 7, 9, 11 of 16
    model = Model([Squeeze(Unsqueeze(part, ints(0)), ints(0)), y], [x])
    plan = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    assert any(isinstance(item, Segment) for item in plan.items)
    data = rand([1, 16, 4, 4])
    got = plan.run([data])
    want = run_reference(model, [data])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[0], got[1][:, 5:13:2])


def test_a_reversed_slice_runs_from_python():
    """A negative step is no oneDNN layout: the slice leaves the segment and still gives the right answer."""
    x = Parameter(Type.f32, [1, 8, 4, 4])
    y = scale(x)
    model = Model([scale(Slice(y, ints(7), ints(-9), ints(-1), ints(1)))], [x])
    plan = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    assert "Slice" not in [s.node.type_name for item in plan.items if isinstance(item, Segment) for s in item.steps]
    data = rand([1, 8, 4, 4])
    np.testing.assert_allclose(plan.run([data])[0], run_reference(model, [data])[0], rtol=1e-4, atol=1e-4)


def test_channel_slices_of_a_channels_last_signal_are_copied_dense_in_the_segment(monkeypatch):
    """silero-vad's STFT front: a 1-D convolution hands [N, L, C] memory; its two channel halves are views with
    gaps, which the segment copies dense (a oneDNN reorder at a byte offset) so squares, sum, root and the next
    convolution all stay native."""
    x = Parameter(Type.f32, [1, 1, 640])
    stft = Convolution(x, Constant(rand([32, 1, 256])), strides=[128], dilations=[1], pads_begin=[0],
                       pads_end=[0])
    two = Constant(np.float32(2))
    real = Power(Slice(stft, ints(0), ints(16), ints(1), ints(1)), two)
    imag = Power(Slice(stft, ints(16), ints(32), ints(1), ints(1)), two)
    magnitude = Sqrt(Add(real, imag))
    y = Relu(Convolution(magnitude, Constant(rand([8, 16, 3])), strides=[1], dilations=[1], pads_begin=[1],
                         pads_end=[1]))
    model = Model([Unsqueeze(y, ints(0))], [x])
    seg, _ = check_one_segment(model, rand([1, 1, 640]), monkeypatch, "Sqrt")
    kinds = [s.node.type_name for s in seg.steps]
    assert kinds.count("Convolution") + kinds.count("FusedConvolution") == 2 and kinds.count("Slice") == 2
    copies = [n for s, n in zip(seg.steps, seg.natives, strict=True) if s.node.type_name == "Slice"]
    assert all(n.primitive is not None for n in copies)  # copies, not views
    assert sorted(n.buffers[0].offset for n in copies) == [0, 16 * 4]  # the second half starts 16 floats in


def test_a_convert_to_the_same_type_is_a_view(monkeypatch):
    """``x.float()`` on a float tensor: gone from the graph (IdentityConvertElimination); the kernel, for a graph
    that keeps one, is a view in the segment; as a model output it is a copy (never the caller's array)."""
    from vinerun.plugins.cpu.kernels import select_kernel

    x = Parameter(Type.f32, [1, 16, 6, 6])
    model = Model([Unsqueeze(Convert(scale(x), destination_type=Type.f32), ints(0))], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    assert "Convert" not in {n.type_name for n in compiled.get_runtime_model().get_ordered_ops()}
    data = rand([1, 16, 6, 6])
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0],
                               rtol=1e-6)
    assert select_kernel(Convert(Parameter(Type.f32, [2]), destination_type=Type.f32)).exec_type == "view_convert"
    p = Parameter(Type.f32, [3])
    plain = ov.Core().compile_model(Model([Convert(p, destination_type=Type.f32)], [p]), "CPU", F32)
    data = rand([3])
    out = plain.create_infer_request().infer([data])[0]
    np.testing.assert_array_equal(out, data)
    assert not np.shares_memory(out, data)


def test_a_transpose_whose_result_is_its_input_in_memory_is_a_view():
    """ConvNeXt's block: a channels-last convolution output permuted to NHWC, a MatMul over the channels, permuted
    back to NCHW for a residual Add read channels-last: both Transposes are views (Python and segments)."""
    from vinerun.plugins.cpu.kernels import select_kernel

    x = Parameter(Type.f32, [1, 8, 6, 6])
    geometry = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    y = Convolution(x, Constant(rand([8, 8, 3, 3])), **geometry)
    nhwc = Transpose(y, ints(0, 2, 3, 1))
    z = Transpose(MatMul(nhwc, Constant(rand([8, 8]))), ints(0, 3, 1, 2))
    out = Relu(Add(z, Relu(y)))
    model = Model([out], [x])
    data = rand([1, 8, 6, 6])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0],
                               rtol=1e-4, atol=1e-4)
    if library() is not None:
        kernel = select_kernel(nhwc)
        channels_last = np.ascontiguousarray(rand([1, 6, 6, 8])).transpose(0, 3, 1, 2)
        assert np.shares_memory(kernel.fn([channels_last])[0], channels_last)  # no copy
        plain = rand([1, 8, 6, 6])
        assert not np.shares_memory(kernel.fn([plain])[0], plain)  # a real transposition copies
        items = compiled._impl.plan.items
        assert sum(isinstance(i, Segment) for i in items) == 1
        assert not [i for i in items if not isinstance(i, Segment) and i.node.type_name in ("Transpose", "Add")]


def test_a_transposed_view_of_a_model_input_is_copied_out():
    x = Parameter(Type.f32, [1, 6, 6, 8])
    model = Model([Transpose(x, ints(0, 1, 2, 3))], [x])
    data = rand([1, 6, 6, 8])
    out = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([data])[0]
    np.testing.assert_array_equal(out, data)
    assert not np.shares_memory(out, data)
