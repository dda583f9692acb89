"""If / Loop / TensorIterator, ONNX Scan and Loop through the frontend, sequences and optionals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import vinerun as ov
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add
from vinerun.ops.control_flow import (
    BodyOutputDescription,
    ConcatOutputDescription,
    If,
    InvariantInputDescription,
    MergedInputDescription,
    SliceInputDescription,
)
from vinerun.ops.loop import Loop, TensorIterator, slice_count, slice_part
from vinerun.ops.optional import Optional, OptionalGetElement, OptionalHasElement
from vinerun.ops.reshape import Unsqueeze
from vinerun.ops.sequences import (
    ConcatFromSequence,
    SequenceAt,
    SequenceConstruct,
    SequenceErase,
    SequenceInsert,
    SequenceLength,
    SplitToSequence,
)


def _run(outputs: list, params: list[Parameter], inputs: list) -> list:
    return run_reference(Model(outputs, params), inputs)


def _if_model() -> tuple[Model, list[Parameter]]:
    x = Parameter(Type.f32, [3])
    cond = Parameter(Type.boolean, [])
    tp = Parameter(Type.f32, [3])
    then_body = Model([Add(tp, Constant(np.float32(1)))], [tp])
    ep = Parameter(Type.f32, [3])
    else_body = Model([Add(ep, ep)], [ep])
    node = If(cond, x, then_body=then_body, else_body=else_body,
              then_inputs=(InvariantInputDescription(1, 0),), else_inputs=(InvariantInputDescription(1, 0),),
              then_outputs=(BodyOutputDescription(0, 0),), else_outputs=(BodyOutputDescription(0, 0),))
    return Model([node.output(0)], [cond, x]), [cond, x]


def test_if_runs_the_chosen_branch() -> None:
    model, _ = _if_model()
    x = np.array([1, 2, 3], np.float32)
    assert model.output(0).element_type == Type.f32 and list(model.output(0).get_shape()) == [3]
    np.testing.assert_array_equal(run_reference(model, [np.array(True), x])[0], x + 1)
    np.testing.assert_array_equal(run_reference(model, [np.array(False), x])[0], x * 2)


def test_if_rejects_a_non_boolean_condition() -> None:
    body = Model([Constant(np.float32(1))], [])
    with pytest.raises(ValidationError, match="boolean"):
        If(Parameter(Type.f32, []), then_body=body, else_body=body,
           then_outputs=(BodyOutputDescription(0, 0),), else_outputs=(BodyOutputDescription(0, 0),))


def _counting_loop(trip: int) -> list:
    """acc starts at 10; each iteration adds the iteration number; scan output collects acc before the add."""
    it, cond, acc = Parameter(Type.i64, []), Parameter(Type.boolean, []), Parameter(Type.i64, [])
    body = Model([cond.output(0), Add(acc, it).output(0),
                  Unsqueeze(acc, Constant(np.array([0], np.int64))).output(0)], [it, cond, acc])
    init = Parameter(Type.i64, [])
    node = Loop(Constant(np.int64(trip)), Constant(np.bool_(True)), init, body=body,
                input_descriptions=(MergedInputDescription(1, 1, 0), MergedInputDescription(2, 2, 1)),
                output_descriptions=(BodyOutputDescription(1, 0), ConcatOutputDescription(2, 1, 0, 1, 1, -1, 0)),
                special_body_ports=[0, 0])
    assert node.get_output_element_type(0) == Type.i64
    return _run(node.outputs(), [init], [np.array(10, np.int64)])


def test_loop_carries_values_and_concatenates_scan_outputs() -> None:
    final, scan = _counting_loop(4)
    assert final == 10 + 0 + 1 + 2 + 3
    np.testing.assert_array_equal(scan, [10, 10, 11, 13])


def test_loop_with_zero_iterations_returns_initial_values_and_empty_scans() -> None:
    final, scan = _counting_loop(0)
    assert final == 10 and scan.shape == (0,) and scan.dtype == np.int64


def test_slice_descriptions_forward_and_backward() -> None:
    x = np.arange(10).reshape(2, 5)
    fwd = SliceInputDescription(0, 0, 0, 1, 1, -1, 1)
    back = SliceInputDescription(0, 0, -1, -1, 1, 0, 1)
    assert slice_count(fwd, 5) == slice_count(back, 5) == 5
    np.testing.assert_array_equal(slice_part(x, fwd, 1), [[1], [6]])
    np.testing.assert_array_equal(slice_part(x, back, 0), [[4], [9]])
    assert slice_count(SliceInputDescription(0, 0, 0, 2, 2, -1, 0), 5) == 2


def test_tensor_iterator_reverse_concat() -> None:
    x = Parameter(Type.f32, [3, 2])
    p = Parameter(Type.f32, [1, 2])
    body = Model([Add(p, p)], [p])
    node = TensorIterator(x, body=body, input_descriptions=(SliceInputDescription(0, 0, 0, 1, 1, -1, 0),),
                          output_descriptions=(ConcatOutputDescription(0, 0, -1, -1, 1, 0, 0),))
    assert list(node.get_output_partial_shape(0).to_shape()) == [3, 2]
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(_run([node.output(0)], [x], [data])[0], (data * 2)[::-1])


def _onnx_scan_model(directions: list[int], out_directions: list[int], axis: int) -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y"])],
        "body", [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
                 helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    node = helper.make_node("Scan", ["init", "xs"], ["final", "ys"], body=body, num_scan_inputs=1,
                            scan_input_directions=directions, scan_output_directions=out_directions,
                            scan_input_axes=[axis])
    xs_shape = [3, 2] if axis == 0 else [2, 3]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("init", TensorProto.FLOAT, [2]),
                                            helper.make_tensor_value_info("xs", TensorProto.FLOAT, xs_shape)],
                              [helper.make_tensor_value_info("final", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("ys", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])


@pytest.mark.parametrize("direction,out_direction,axis", [(0, 0, 0), (1, 0, 0), (0, 1, 1), (1, 1, -1)])
def test_onnx_scan_directions_and_axes(direction: int, out_direction: int, axis: int) -> None:
    core = ov.Core()
    model = core.read_model(_onnx_scan_model([direction], [out_direction], axis).SerializeToString())
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    fed = xs if axis == 0 else xs.T.copy()
    init = np.array([1, -1], np.float32)
    final, ys = core.compile_model(model, "CPU").create_infer_request().infer([init, fed]).to_tuple()
    steps = xs[::-1] if direction else xs
    expected = init + np.cumsum(steps, axis=0)
    if out_direction:
        expected = expected[::-1]
    np.testing.assert_allclose(final, init + xs.sum(axis=0))
    np.testing.assert_allclose(ys, expected)


def test_sequence_ops() -> None:
    a, b = Parameter(Type.f32, [2]), Parameter(Type.f32, [2])
    seq = SequenceConstruct(a, b)
    pos = Constant(np.int64(-1))
    outs = [SequenceLength(seq).output(0), SequenceAt(seq, pos).output(0),
            SequenceInsert(seq, a, Constant(np.int64(0))).output(0), SequenceErase(seq).output(0),
            ConcatFromSequence(seq, axis=0).output(0), ConcatFromSequence(seq, axis=0, new_axis=True).output(0)]
    x, y = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    n, last, inserted, erased, cat, stacked = _run(outs, [a, b], [x, y])
    assert n == 2 and n.dtype == np.int64
    np.testing.assert_array_equal(last, y)
    assert [v.tolist() for v in inserted] == [[1, 2], [1, 2], [3, 4]]
    assert [v.tolist() for v in erased] == [[1, 2]]
    assert cat.tolist() == [1, 2, 3, 4] and stacked.shape == (2, 2)


def test_sequence_at_out_of_range() -> None:
    a = Parameter(Type.f32, [2])
    with pytest.raises(ValidationError, match="out of range"):
        _run([SequenceAt(SequenceConstruct(a), Constant(np.int64(3))).output(0)], [a], [np.zeros(2, np.float32)])


def test_split_to_sequence() -> None:
    x = Parameter(Type.f32, [5, 2])
    data = np.arange(10, dtype=np.float32).reshape(5, 2)
    even = _run([SplitToSequence(x, Constant(np.int64(2))).output(0)], [x], [data])[0]
    assert [p.shape for p in even] == [(2, 2), (2, 2), (1, 2)]
    listed = _run([SplitToSequence(x, Constant(np.array([1, 4], np.int64))).output(0)], [x], [data])[0]
    assert [p.shape for p in listed] == [(1, 2), (4, 2)]
    squeezed = _run([SplitToSequence(x, axis=1, keepdims=False).output(0)], [x], [data])[0]
    np.testing.assert_array_equal(squeezed[1], data[:, 1])


def test_optional_ops() -> None:
    x = Parameter(Type.f32, [2])
    data = np.ones(2, np.float32)
    has, value = _run([OptionalHasElement(Optional(x)).output(0), OptionalGetElement(Optional(x)).output(0)],
                      [x], [data])
    assert bool(has) and has.dtype == np.bool_
    np.testing.assert_array_equal(value, data)
    empty = Optional(element_type=Type.f32)
    assert not _run([OptionalHasElement(empty).output(0)], [], [])[0]
    assert not _run([OptionalHasElement().output(0)], [], [])[0]
    with pytest.raises(Exception, match="empty"):
        _run([OptionalGetElement(empty).output(0)], [], [])


def test_onnx_scan8_batches_and_reverses() -> None:
    m = _onnx_scan_model([0], [0], 0)
    node = helper.make_node("Scan", ["", "init", "xs"], ["final", "ys"], body=m.graph.node[0].attribute[0].g,
                            num_scan_inputs=1, directions=[1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("init", TensorProto.FLOAT, [3, 2]),
                                            helper.make_tensor_value_info("xs", TensorProto.FLOAT, [3, 4, 2])],
                              [helper.make_tensor_value_info("final", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("ys", TensorProto.FLOAT, None)])
    core = ov.Core()
    model = core.read_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)]).SerializeToString())
    rng = np.random.default_rng(0)
    init, xs = rng.random((3, 2), dtype=np.float32), rng.random((3, 4, 2), dtype=np.float32)
    final, ys = core.compile_model(model, "CPU").create_infer_request().infer([init, xs]).to_tuple()
    np.testing.assert_allclose(final, init + xs.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(ys, init[:, None] + np.cumsum(xs[:, ::-1], axis=1), rtol=1e-6)
