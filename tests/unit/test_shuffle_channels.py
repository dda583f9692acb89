"""The channel shuffle as exporters write it (Reshape, Transpose, Reshape) becomes ShuffleChannels, which the CPU
runs as one oneDNN reorder on channels-last data; channel Splits become Slices; ShuffleNet's unit (convolution,
split, convolution, concat, shuffle) then runs as one native segment with the reference's values."""

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
from vinerun.ops.concat_split import Concat, Split
from vinerun.ops.convolution import Convolution
from vinerun.ops.reshape import Reshape
from vinerun.ops.shuffle_channels import ShuffleChannels
from vinerun.ops.transpose import Transpose
from vinerun.plugins.cpu.kernels import select_kernel
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.native_segment import Segment
from vinerun.transformations.channel_split import ChannelSplitToSlices
from vinerun.transformations.shuffle_channels_fusion import ShuffleChannelsFusion

RNG = np.random.default_rng(4)


def i64(*values: int) -> Constant:
    return Constant(np.array(values, np.int64))


def rand(shape: list[int]) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def shuffle_as_written(x, n: int, c: int, h: int, w: int, group: int):
    split = Reshape(x, i64(n, group, c // group, h, w), special_zero=False)
    return Reshape(Transpose(split, i64(0, 2, 1, 3, 4)), i64(n, c, h, w), special_zero=False)


def conv1x1(x, c_in: int, c_out: int):
    return Relu(Convolution(x, Constant(rand([c_out, c_in, 1, 1]) * 0.5), strides=[1, 1], dilations=[1, 1],
                            pads_begin=[0, 0], pads_end=[0, 0]))


@pytest.mark.parametrize("group", [2, 3, 4])
def test_reshape_transpose_reshape_becomes_shuffle_channels(group):
    x = Parameter(Type.f32, [2, 12, 3, 5])
    model = Model([Relu(shuffle_as_written(x, 2, 12, 3, 5, group))], [x])
    data = rand([2, 12, 3, 5])
    want = run_reference(model, [data])[0]
    assert ShuffleChannelsFusion()(model).modified
    kinds = [n.type_name for n in model.get_ordered_ops()]
    assert "ShuffleChannels" in kinds and "Transpose" not in kinds and "Reshape" not in kinds
    np.testing.assert_array_equal(run_reference(model, [data])[0], want)


def test_another_transpose_order_is_not_a_shuffle():
    x = Parameter(Type.f32, [1, 8, 2, 2])
    split = Reshape(x, i64(1, 2, 4, 2, 2), special_zero=False)
    model = Model([Reshape(Transpose(split, i64(0, 1, 2, 4, 3)), i64(1, 8, 2, 2), special_zero=False)], [x])
    assert not ShuffleChannelsFusion()(model).modified


@pytest.mark.parametrize("channels_last", [False, True])
def test_the_cpu_kernel_shuffles_any_layout_as_the_reference(channels_last):
    x = Parameter(Type.f32, [2, 12, 3, 5])
    node = ShuffleChannels(x, axis=1, group=3)
    kernel = select_kernel(node)
    if library() is not None:
        assert kernel.exec_type == "onednn_shuffle_channels"
    data = rand([2, 12, 3, 5])
    given = np.ascontiguousarray(data.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) if channels_last else data
    np.testing.assert_array_equal(kernel.fn([given])[0], node.evaluate([data])[0])


def test_a_channel_split_becomes_slices():
    x = Parameter(Type.f32, [1, 8, 4, 4])
    parts = Split(x, i64(1), num_splits=2)
    model = Model([Relu(parts.output(1))], [x])  # part 0 unread: no Slice for it
    data = rand([1, 8, 4, 4])
    want = run_reference(model, [data])[0]
    assert ChannelSplitToSlices()(model).modified
    kinds = [n.type_name for n in model.get_ordered_ops()]
    assert kinds.count("Slice") == 1 and "Split" not in kinds
    np.testing.assert_array_equal(run_reference(model, [data])[0], want)


def test_a_shufflenet_unit_is_one_native_segment():
    """Up to the convolution that writes the model output."""
    x = Parameter(Type.f32, [1, 16, 8, 8])
    y = conv1x1(x, 16, 16)
    halves = Split(y, i64(1), num_splits=2)
    branch = conv1x1(conv1x1(halves.output(1), 8, 8), 8, 8)
    joined = Concat([halves.output(0), branch], axis=1)
    out = conv1x1(shuffle_as_written(joined, 1, 16, 8, 8, 2), 16, 16)
    model = Model([out], [x])
    data = rand([1, 16, 8, 8])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0],
                               rtol=1e-4, atol=1e-4)
    if library() is not None:
        items = compiled._impl.plan.items  # the last convolution writes the NCHW model output from Python
        assert isinstance(items[0], Segment) and [i.node.type_name for i in items[1:]] in ([], ["FusedConvolution"])
