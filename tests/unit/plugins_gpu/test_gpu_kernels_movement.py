"""GPU view and data-movement kernels against the NumPy references (exact), per dtype."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU, check, const, param, rand
from vinerun.ops import (
    broadcast,
    concat_split,
    identity,
    pad,
    reshape,
    roll,
    slicing,
    transpose,
    triangular,
)
from vinerun.plugins.gpu.kernels import select_kernel

TYPES = ["f32", "f16", "i64", "i32", "u8", "boolean"]


def _view_check(node, inputs):
    check(node, inputs)
    assert select_kernel(node, CPU).view


@pytest.mark.parametrize("et", TYPES)
def test_views(et):
    x = rand(et, [2, 1, 6])
    _view_check(reshape.Reshape(param(et, [2, 1, 6]), const([0, -1, 3]), special_zero=True), [x, [0, -1, 3]])
    _view_check(reshape.Squeeze(param(et, [2, 1, 6]), const([1])), [x, [1]])
    _view_check(reshape.Squeeze(param(et, [2, 1, 6])), [x])
    _view_check(reshape.Unsqueeze(param(et, [2, 1, 6]), const([0, -1])), [x, [0, -1]])
    _view_check(identity.Identity(param(et, [2, 1, 6])), [x])


def test_views_with_dynamic_shapes_and_computed_operands():
    x = rand("f32", [3, 4, 1])
    node = reshape.Reshape(param("f32", [-1, 4, 1]), param("i64", [2]), special_zero=True)
    assert select_kernel(node, CPU).host
    check(node, [x, np.array([0, -1])])
    check(reshape.Squeeze(param("f32", [-1, -1, 1])), [x])
    check(reshape.Reshape(param("f32", [-1, 4, 1]), const([-1, 0]), special_zero=False), [np.zeros((0, 4, 1),
                                                                                                np.float32), [-1, 0]])


@pytest.mark.parametrize("et", TYPES)
def test_transpose_concat_split(et):
    x = rand(et, [2, 3, 4])
    check(transpose.Transpose(param(et, [2, 3, 4]), const([2, 0, 1])), [x, [2, 0, 1]])
    check(transpose.Transpose(param(et, [2, 3, 4]), const([], np.int64)), [x, np.array([], np.int64)])
    y = rand(et, [2, 5, 4], 1)
    check(concat_split.Concat([param(et, [2, 3, 4]), param(et, [2, 5, 4])], axis=-2), [x, y])
    _view_check(concat_split.Split(param(et, [2, 3, 4]), const(-1), num_splits=2), [x, np.array(-1)])
    _view_check(concat_split.VariadicSplit(param(et, [2, 3, 4]), const(1), const([1, -1, 0])), [x, 1, [1, -1, 0]])


SLICES = [([0, 1], [2, 3], [1, 1], None), ([-1, 5], [-10, 0], [-1, -2], None), ([1], [-1], [2], [2]),
          ([3, -2], [-100, 0], [-2, -1], [2, 0]), ([9], [100], [1], [1])]


@pytest.mark.parametrize("et", ["f32", "i32", "boolean"])
@pytest.mark.parametrize("start,stop,step,axes", SLICES)
def test_slice(et, start, stop, step, axes):
    x = rand(et, [4, 6, 5])
    ins = [param(et, [4, 6, 5]), const(start), const(stop), const(step)] + ([const(axes)] if axes else [])
    node = slicing.Slice(*ins)
    check(node, [x, start, stop, step] + ([axes] if axes else []))
    assert select_kernel(node, CPU).view == all(s > 0 for s in step)


@pytest.mark.parametrize("masks", [dict(), dict(begin_mask=[1, 0, 0], end_mask=[0, 0, 1]),
                                   dict(new_axis_mask=[0, 1, 0], shrink_axis_mask=[1, 0, 0]),
                                   dict(ellipsis_mask=[0, 1, 0], shrink_axis_mask=[0, 0, 1])])
def test_strided_slice(masks):
    x = rand("f32", [4, 6, 5])
    begin, end, stride = [1, -1, 0], [4, -6, 5], [1, -2, 2]
    node = slicing.StridedSlice(param("f32", [4, 6, 5]), const(begin), const(end), const(stride), **masks)
    check(node, [x, begin, end, stride])


@pytest.mark.parametrize("et", TYPES)
def test_tile_and_broadcast(et):
    x = rand(et, [3, 1])
    check(broadcast.Tile(param(et, [3, 1]), const([2, 1, 3])), [x, [2, 1, 3]])
    check(broadcast.Tile(param(et, [3, 1]), const([2])), [x, [2]])
    check(broadcast.Broadcast(param(et, [3, 1]), const([2, 3, 4])), [x, [2, 3, 4]])
    check(broadcast.Broadcast(param(et, [3, 1]), const([4, 1, 1]), mode="bidirectional"), [x, [4, 1, 1]])
    check(broadcast.Broadcast(param(et, [3, 1]), const([2, 3, 5]), const([1, 2]), mode="explicit"),
          [x, [2, 3, 5], [1, 2]])


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
@pytest.mark.parametrize("et", ["f32", "i32", "boolean"])
def test_pad(mode, et):
    x = rand(et, [3, 4, 5])
    begin, end = [1, -1, 2], [2, 2, -2]
    ins = [param(et, [3, 4, 5]), const(begin), const(end)]
    if mode == "constant":
        value = rand(et, [], 9)
        check(pad.Pad(*ins, const(value, value.dtype), pad_mode=mode), [x, begin, end, value])
        check(pad.Pad(*ins, param(et, []), pad_mode=mode), [x, begin, end, value])
    check(pad.Pad(*ins, pad_mode=mode), [x, begin, end])


@pytest.mark.parametrize("cls", ["DepthToSpace", "SpaceToDepth"])
@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
@pytest.mark.parametrize("shape", [[1, 8, 2, 4], [2, 8, 2, 4, 2]])
def test_block_rearrange(cls, mode, shape):
    x = rand("f32", shape)
    check(getattr(transpose, cls)(param("f32", shape), block_size=2, mode=mode), [x])


def test_roll_reverse_sequence_trilu():
    x = rand("i64", [3, 4, 5])
    check(roll.Roll(param("i64", [3, 4, 5]), const([2, -7]), const([0, -1])), [x, [2, -7], [0, -1]])
    check(roll.Roll(param("i64", [3, 4, 5]), const([3]), const([1, 2])), [x, [3], [1, 2]])
    lengths = np.array([4, 0, 2, 7, 1], np.int32)
    check(triangular.ReverseSequence(param("i64", [3, 4, 5]), param("i32", [5]), batch_axis=2, seq_axis=1),
          [x, lengths])
    check(triangular.ReverseSequence(param("i64", [3, 4, 5]), param("i32", [3]), batch_axis=0, seq_axis=2),
          [x, lengths[:3]])
    for upper in (True, False):
        check(triangular.Trilu(param("i64", [3, 4, 5]), param("i64", []), upper=upper), [x, np.array(-1)])
        check(triangular.Trilu(param("i64", [3, 4, 5]), upper=upper), [x])
