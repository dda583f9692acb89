"""Shape and data-movement ops: shape inference and NumPy references on hand-checked cases."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from tests.ops._onnx_util import run_model, run_onnx
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.broadcast import Broadcast, Tile
from vinerun.ops.col2im import Col2Im
from vinerun.ops.concat_split import Concat, Split, VariadicSplit
from vinerun.ops.cumulative import CumProd, CumSum
from vinerun.ops.gather import Gather, GatherElements, GatherND
from vinerun.ops.pad import Pad
from vinerun.ops.reshape import Reshape, Squeeze, Unsqueeze
from vinerun.ops.scatter import ScatterElementsUpdate, ScatterNDUpdate, ScatterUpdate, TensorScatter
from vinerun.ops.sequence_gen import Eye, OneHot, Range
from vinerun.ops.shape_of import ShapeOf
from vinerun.ops.slicing import Slice, StridedSlice
from vinerun.ops.topk_unique import NonZero, TopK, Unique
from vinerun.ops.transpose import DepthToSpace, SpaceToDepth, Transpose
from vinerun.ops.triangular import ReverseSequence, Trilu


def p(shape, et=Type.f32):
    return Parameter(et, shape)


def c(values, dtype=np.int64):
    return Constant(np.asarray(values, dtype))


def ps(node, i=0):
    return str(node.get_output_partial_shape(i))


# --- shape inference -------------------------------------------------------------------------------------
def test_shape_of_static_and_dynamic():
    assert ps(ShapeOf(p([2, -1, 3]))) == "[3]"
    assert ShapeOf(p([2, 3])).static_value().tolist() == [2, 3]
    assert ShapeOf(p([2, -1])).static_value() is None
    assert ShapeOf(p(None), output_type=Type.i32).get_output_element_type(0) == Type.i32


def test_reshape_inference():
    assert ps(Reshape(p([2, 3, 4]), c([0, -1]), special_zero=True)) == "[2,12]"
    assert ps(Reshape(p([2, 3, 4]), c([4, -1]), special_zero=False)) == "[4,6]"
    assert ps(Reshape(p([-1, 3, 4]), c([0, 12]), special_zero=True)) == "[?,12]"
    assert ps(Reshape(p([2, 3]), p([3], Type.i64))) == "[?,?,?]"
    assert ps(Reshape(p([0, 3]), c([3, 0]), special_zero=False)) == "[3,0]"
    with pytest.raises(ValidationError, match="cannot reshape"):
        Reshape(p([2, 3]), c([4, 2]))


def test_squeeze_unsqueeze_inference():
    assert ps(Squeeze(p([1, 3, 1, 2]))) == "[3,2]"
    assert ps(Squeeze(p([1, 3, 1, 2]), c([-2]))) == "[1,3,2]"
    assert ps(Squeeze(p([1, -1]))) == "[...]"
    with pytest.raises(ValidationError, match="not 1"):
        Squeeze(p([2, 3]), c([0]))
    assert ps(Unsqueeze(p([3, 4]), c([0, -1]))) == "[1,3,4,1]"
    assert ps(Unsqueeze(p([3, 4]), c([2, 0]))) == "[1,3,1,4]"


def test_concat_and_split_inference():
    assert ps(Concat([p([2, -1]), p([3, 5])], axis=0)) == "[5,5]"
    assert ps(Concat([p([2, 4]), p([-1, 4])], axis=-2)) == "[?,4]"
    with pytest.raises(ValidationError):
        Concat([p([2, 4]), p([2, 5])], axis=0)
    s = Split(p([6, 4]), c(0), num_splits=3)
    assert [ps(s, i) for i in range(3)] == ["[2,4]"] * 3
    v = VariadicSplit(p([6, 4]), c(1), c([1, -1]))
    assert [ps(v, i) for i in range(2)] == ["[6,1]", "[6,3]"]


def test_slice_inference_clamps_and_negative_steps():
    x = p([10, 5])
    big = np.iinfo(np.int64).max
    assert ps(Slice(x, c([1]), c([big]), c([2]))) == "[5,5]"
    assert ps(Slice(x, c([-1, 20]), c([-big, 0]), c([-1, -2]), c([0, 1]))) == "[10,2]"
    assert ps(Slice(x, c([0]), c([3]), c([1]), c([-1]))) == "[10,3]"


def test_strided_slice_matches_numpy_indexing():
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    node = StridedSlice(p([2, 3, 4]), c([0, 1, 0]), c([0, 3, -1]), c([1, 1, 2]), begin_mask=[1, 0, 0],
                        end_mask=[1, 0, 0], shrink_axis_mask=[0, 0, 0], new_axis_mask=[0, 0, 0], ellipsis_mask=[])
    expect = x[:, 1:3, 0:-1:2]
    assert ps(node) == str(PartialShape(expect.shape))
    np.testing.assert_array_equal(node.evaluate([x, np.array([0, 1, 0]), np.array([0, 3, -1]),
                                                 np.array([1, 1, 2])])[0], expect)
    node = StridedSlice(p([2, 3, 4]), c([0, 0, 1]), c([0, 0, 2]), c([1, 1, 1]), begin_mask=[0, 0, 0],
                        end_mask=[0, 0, 0], new_axis_mask=[1, 0, 0], shrink_axis_mask=[0, 0, 1],
                        ellipsis_mask=[0, 1, 0])
    expect = x[np.newaxis, ..., 1]
    assert ps(node) == str(PartialShape(expect.shape))
    np.testing.assert_array_equal(node.evaluate([x, np.array([0, 0, 1]), np.array([0, 0, 2]),
                                                 np.array([1, 1, 1])])[0], expect)


def test_transpose_and_blocks():
    assert ps(Transpose(p([2, 3, 4]), c([2, 0, 1]))) == "[4,2,3]"
    assert ps(Transpose(p([2, 3, 4]), c([]))) == "[4,3,2]"
    x = np.arange(1 * 8 * 2 * 3, dtype=np.float32).reshape(1, 8, 2, 3)
    for mode in ("blocks_first", "depth_first"):
        d2s = DepthToSpace(p([1, 8, 2, 3]), mode=mode, block_size=2)
        assert ps(d2s) == "[1,2,4,6]"
        y = d2s.evaluate([x])[0]
        back = SpaceToDepth(p([1, 2, 4, 6]), mode=mode, block_size=2).evaluate([y])[0]
        np.testing.assert_array_equal(back, x)
    # DCR by hand: output[0, 0, 0, 1] comes from channel 1 (block offset (0, 1)), position (0, 0)
    y = DepthToSpace(p([1, 8, 2, 3]), mode="blocks_first", block_size=2).evaluate([x])[0]
    assert y[0, 0, 0, 1] == x[0, 2, 0, 0]
    y = DepthToSpace(p([1, 8, 2, 3]), mode="depth_first", block_size=2).evaluate([x])[0]
    assert y[0, 0, 0, 1] == x[0, 1, 0, 0]


# --- indexing --------------------------------------------------------------------------------------------
def test_gather_batch_dims_and_negative_indices():
    data = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    idx = np.array([[0, -1], [2, 1]], np.int64)
    node = Gather(p([2, 3, 4]), p([2, 2], Type.i64), c(1), batch_dims=1)
    assert ps(node) == "[2,2,4]"
    out = node.evaluate([data, idx, np.array(1)])[0]
    np.testing.assert_array_equal(out, np.stack([data[0][[0, 2]], data[1][[2, 1]]]))
    out = Gather(p([2, 3, 4]), p([3], Type.i64), c(2)).evaluate([data, np.array([0, 9, -4]), np.array(2)])[0]
    np.testing.assert_array_equal(out[..., 1], 0)  # out of range reads zero
    np.testing.assert_array_equal(out[..., 2], data[..., 0])


def test_gather_elements_and_nd():
    data = np.array([[1, 2], [3, 4]], np.float32)
    out = GatherElements(p([2, 2]), p([2, 2], Type.i64), axis=1).evaluate([data, np.array([[0, 0], [1, -2]])])[0]
    np.testing.assert_array_equal(out, [[1, 1], [4, 3]])
    node = GatherND(p([2, 2, 2]), p([2, 1], Type.i64), batch_dims=1)
    assert ps(node) == "[2,2]"
    d = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    np.testing.assert_array_equal(node.evaluate([d, np.array([[1], [0]])])[0], [[2, 3], [4, 5]])


def test_scatter_reductions():
    data = np.zeros((2, 3), np.float32)
    upd = np.array([[1, 2]], np.float32)
    node = ScatterElementsUpdate(p([2, 3]), p([1, 2], Type.i64), p([1, 2]), c(1), reduction="sum")
    out = node.evaluate([data + 1, np.array([[1, 1]]), upd, np.array(1)])[0]
    np.testing.assert_array_equal(out, [[1, 4, 1], [1, 1, 1]])
    node = ScatterElementsUpdate(p([2, 3]), p([1, 2], Type.i64), p([1, 2]), c(1), reduction="max",
                                 use_init_val=False)
    out = node.evaluate([data + 5, np.array([[0, 0]]), upd, np.array(1)])[0]
    np.testing.assert_array_equal(out, [[2, 5, 5], [5, 5, 5]])
    nd = ScatterNDUpdate(p([2, 3]), p([2, 1], Type.i64), p([2, 3]), reduction="prod")
    out = nd.evaluate([data + 2, np.array([[1], [1]]), np.full((2, 3), 3, np.float32)])[0]
    np.testing.assert_array_equal(out, [[2, 2, 2], [18, 18, 18]])
    su = ScatterUpdate(p([2, 3]), p([1], Type.i64), p([2, 1]), c(1))
    out = su.evaluate([data, np.array([2]), np.array([[7], [8]], np.float32), np.array(1)])[0]
    np.testing.assert_array_equal(out, [[0, 0, 7], [0, 0, 8]])


def test_tensor_scatter_circular():
    cache = np.zeros((2, 4, 1), np.float32)
    upd = np.array([[[1], [2]], [[3], [4]]], np.float32)
    out = TensorScatter(p([2, 4, 1]), p([2, 2, 1]), p([2], Type.i64), axis=1, mode="circular").evaluate(
        [cache, upd, np.array([3, 1])])[0]
    np.testing.assert_array_equal(out[..., 0], [[2, 0, 0, 1], [0, 3, 4, 0]])


# --- generators, selection, misc -------------------------------------------------------------------------
def test_broadcast_and_tile():
    assert ps(Broadcast(p([3, 1]), c([2, 3, 4]))) == "[2,3,4]"
    assert ps(Broadcast(p([3, 1]), c([1, 5]), mode="bidirectional")) == "[3,5]"
    node = Broadcast(p([3]), c([2, 3]), c([1]), mode="explicit")
    out = node.evaluate([np.array([1, 2, 3], np.float32), np.array([2, 3]), np.array([1])])[0]
    np.testing.assert_array_equal(out, [[1, 2, 3], [1, 2, 3]])
    assert ps(Tile(p([2, 3]), c([2, 1, 2]))) == "[2,2,6]"


def test_pad_modes_and_cropping():
    x = np.array([[1, 2, 3]], np.float32)
    node = Pad(p([1, 3]), c([0, 2]), c([0, -1]), c(9.0, np.float32), pad_mode="constant")
    assert ps(node) == "[1,4]"
    np.testing.assert_array_equal(node.evaluate([x, np.array([0, 2]), np.array([0, -1]), np.float32(9)])[0],
                                  [[9, 9, 1, 2]])
    out = Pad(p([1, 3]), c([0, 2]), c([0, 1]), pad_mode="reflect").evaluate([x, np.array([0, 2]),
                                                                             np.array([0, 1])])[0]
    np.testing.assert_array_equal(out, [[3, 2, 1, 2, 3, 2]])


def test_range_eye_onehot():
    assert ps(Range(c(1), c(10), c(3), output_type=Type.i32)) == "[3]"
    out = Range(c(5.0, np.float32), c(1.0, np.float32), c(-1.5, np.float32), output_type=Type.f32).evaluate(
        [np.float32(5), np.float32(1), np.float32(-1.5)])[0]
    np.testing.assert_allclose(out, [5, 3.5, 2])
    assert out.dtype == np.float32
    eye = Eye(c(2), c(3), c(1), output_type=Type.i32)
    assert ps(eye) == "[2,3]"
    np.testing.assert_array_equal(eye.evaluate([2, 3, 1])[0], [[0, 1, 0], [0, 0, 1]])
    hot = OneHot(p([2], Type.i64), c(3), c(5.0, np.float32), c(0.0, np.float32), axis=0,
                 negative_indices_mode="normalize")
    assert ps(hot) == "[3,2]"
    np.testing.assert_array_equal(hot.evaluate([np.array([-1, 0]), 3, np.float32(5), np.float32(0)])[0],
                                  [[0, 5], [0, 0], [5, 0]])


def test_topk_ties_keep_index_order():
    x = np.array([[1, 3, 3, 2, 3]], np.float32)
    node = TopK(p([1, 5]), c(2), axis=1, mode="max", sort="value", index_element_type=Type.i64)
    assert ps(node) == "[1,2]"
    values, idx = node.evaluate([x, np.array(2)])
    np.testing.assert_array_equal(values, [[3, 3]])
    np.testing.assert_array_equal(idx, [[1, 2]])
    values, idx = TopK(p([1, 5]), c(3), axis=-1, mode="min").evaluate([x, np.array(3)])
    np.testing.assert_array_equal(idx, [[0, 3, 1]])
    assert idx.dtype == np.int32


def test_nonzero_unique():
    out = NonZero(p([2, 2])).evaluate([np.array([[1, 0], [0, 2]], np.float32)])[0]
    np.testing.assert_array_equal(out, [[0, 1], [0, 1]])
    u = Unique(p([6]), sorted=False)
    y, first, inverse, counts = u.evaluate([np.array([2, 1, 1, 3, 4, 3], np.float32)])
    np.testing.assert_array_equal(y, [2, 1, 3, 4])
    np.testing.assert_array_equal(first, [0, 1, 3, 4])
    np.testing.assert_array_equal(inverse, [0, 1, 1, 2, 3, 2])
    np.testing.assert_array_equal(counts, [1, 2, 2, 1])


def test_cumulative_trilu_reverse_sequence():
    x = np.array([1, 2, 3], np.float32)
    node = CumSum(p([3]), c(0), exclusive=True, reverse=True)
    np.testing.assert_array_equal(node.evaluate([x, np.array(0)])[0], [5, 3, 0])
    np.testing.assert_array_equal(CumProd(p([3]), c(0), exclusive=True).evaluate([x, np.array(0)])[0], [1, 1, 2])
    m = np.ones((3, 3), np.int32)
    np.testing.assert_array_equal(Trilu(p([3, 3], Type.i32), upper=False).evaluate([m, np.array(-1)])[0],
                                  [[0, 0, 0], [1, 0, 0], [1, 1, 0]])
    seq = np.arange(6, dtype=np.float32).reshape(3, 2)  # [time, batch]
    out = ReverseSequence(p([3, 2]), p([2], Type.i64), batch_axis=1, seq_axis=0).evaluate([seq, np.array([3, 1])])[0]
    np.testing.assert_array_equal(out, [[4, 1], [2, 3], [0, 5]])


def test_col2im_sums_overlaps():
    # one channel, 2x2 kernel over a 3x3 image, stride 1: 4 blocks; all ones -> coverage counts
    node = Col2Im(p([1, 4, 4]), c([3, 3]), c([2, 2]))
    assert ps(node) == "[1,1,3,3]"
    out = node.evaluate([np.ones((1, 4, 4), np.float32), np.array([3, 3]), np.array([2, 2])])[0]
    np.testing.assert_array_equal(out[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


# --- ONNX translation with dynamic shapes ----------------------------------------------------------------
def test_onnx_dynamic_batch_shape_chain_and_flatten():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("zero", TensorProto.INT64, [1], [0])),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Constant", [], ["rest"], value=helper.make_tensor("rest", TensorProto.INT64, [1], [-1])),
        helper.make_node("Concat", ["n", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Flatten", ["x"], ["f"], axis=2),
    ]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("r", "f")]
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    compiled, (r, f) = run_model(nodes, [x], outs, [data])
    np.testing.assert_array_equal(r, data.reshape(2, 12))
    np.testing.assert_array_equal(f, data.reshape(6, 4))
    assert str(compiled.outputs[0].partial_shape) == "[?,?]"


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_onnx_flatten_of_a_static_batch_follows_model_reshape(axis, tmp_path):
    """A classifier head exported at batch 1 (Flatten of a static [1, 8, 2, 2]) reshaped to batch 3: the Flatten
    keeps the batch generic, as in OpenVINO's frontend (a folded [1, -1] made the MatMul after it refuse)."""
    import onnx

    import vinerun as ov

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 2, 2])
    width = {1: 32, 2: 4, -1: 2}[axis]
    w = helper.make_tensor("w", TensorProto.FLOAT, [width, 5], np.linspace(-1, 1, width * 5).tolist())
    nodes = [helper.make_node("Flatten", ["x"], ["f"], axis=axis), helper.make_node("MatMul", ["f", "w"], ["y"])]
    graph = helper.make_graph(nodes, "head", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    path = tmp_path / "head.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    core = ov.Core()
    model = core.read_model(path)
    model.reshape({"x": [3, 8, 2, 2]})
    data = np.random.default_rng(0).standard_normal((3, 8, 2, 2)).astype(np.float32)
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    got = compiled.create_infer_request().infer({0: data})[0]
    lead = {1: 3, 2: 24, -1: 48}[axis]
    want = data.reshape(lead, -1) @ np.linspace(-1, 1, width * 5, dtype=np.float32).reshape(width, 5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_onnx_pad_with_runtime_pads_axes_and_wrap():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    pads = helper.make_tensor_value_info("pads", TensorProto.INT64, [2])
    axes = helper.make_tensor_value_info("axes", TensorProto.INT64, [1])
    nodes = [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="wrap"),
             helper.make_node("Pad", ["x", "pads", "", "axes"], ["z"], mode="edge")]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")]
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    _, (y, z) = run_model(nodes, [x, pads, axes], outs, [data, np.array([2, -1]), np.array([-1])], opset=19)
    np.testing.assert_array_equal(y, np.pad(data, [(0, 0), (2, 0)], mode="wrap")[:, :-1])
    np.testing.assert_array_equal(z, np.pad(data, [(0, 0), (2, 0)], mode="edge")[:, :-1])


# --- attribute forms of older opsets ---------------------------------------------------------------------
def test_onnx_attribute_forms_of_older_opsets():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (y,) = run_onnx(helper.make_node("Slice", ["x"], ["y"], starts=[1, -1], ends=[3, -5], axes=[1, 2]), 9, {"x": x})
    np.testing.assert_array_equal(y, x[:, 1:3, -1:-5])
    (y,) = run_onnx(helper.make_node("Slice", ["x"], ["y"], starts=[0], ends=[1]), 9, {"x": x})
    np.testing.assert_array_equal(y, x[0:1])
    (y,) = run_onnx(helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 0, 0, 0, 2], value=7.0), 9, {"x": x})
    np.testing.assert_array_equal(y, np.pad(x, [(0, 0), (1, 0), (0, 2)], constant_values=7))
    (y,) = run_onnx(helper.make_node("Unsqueeze", ["x"], ["y"], axes=[0, 4]), 11, {"x": x})
    assert y.shape == (1, 2, 3, 4, 1)
    (y,) = run_onnx(helper.make_node("Squeeze", ["x"], ["y"], axes=[0]), 11, {"x": x[:1]})
    assert y.shape == (3, 4)
    a, b = run_onnx(helper.make_node("Split", ["x"], ["a", "b"], axis=2, split=[1, 3]), 11, {"x": x})
    np.testing.assert_array_equal(b, x[..., 1:])
    values, indices = run_onnx(helper.make_node("TopK", ["x"], ["v", "i"], k=2), 9, {"x": x})
    np.testing.assert_array_equal(indices, np.broadcast_to([3, 2], (2, 3, 2)))
    assert indices.dtype == np.int64


def test_onnx_split_num_outputs_uneven_and_compress():
    x = np.arange(7, dtype=np.int32)
    parts = run_onnx(helper.make_node("Split", ["x"], ["a", "b", "c"], num_outputs=3), 18, {"x": x})
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6]]
    cond = np.array([True, False, True])
    (y,) = run_onnx(helper.make_node("Compress", ["x", "c"], ["y"]), 11, {"x": x.reshape(1, 7), "c": cond})
    np.testing.assert_array_equal(y, [0, 2])


def test_partially_known_shape_values_propagate():
    x = p([-1, 3, 4])
    s = ShapeOf(x)
    batch = Gather(s, c([0]), c(0))
    assert ps(Reshape(x, Concat([batch, c([12])], axis=0))) == "[?,12]"
    assert ps(Reshape(x, Concat([batch, c([-1])], axis=0))) == "[?,?]"
    tail = Slice(s, c([1]), c([3]), c([1]))
    assert ps(Reshape(x, Concat([c([-1]), tail], axis=0))) == "[?,3,4]"
    assert ps(Broadcast(p([1, 1, 4]), s)) == "[?,3,4]"
    assert ps(Tile(p([2, 3]), Concat([c([2]), Gather(s, c([0]), c(0))], axis=0))) == "[4,?]"


def test_reshape_special_zero_copies_dynamic_dims():
    assert ps(Reshape(p([-1, 3, 4]), c([0, -1]), special_zero=True)) == "[?,12]"
    assert ps(Reshape(p([-1, 3, 4]), c([0, 4, 3]), special_zero=True)) == "[?,4,3]"
    assert ps(Reshape(p([-1, 3, 4]), c([-1, 6]), special_zero=True)) == "[?,6]"
    with pytest.raises(ValidationError):
        Reshape(p([-1, 3, 4]), c([0, 5]), special_zero=True)
