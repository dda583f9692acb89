"""Model's OpenVINO API: outputs, sinks, variables, reshape forms, evaluate, runtime info, copies."""

import copy

import numpy as np
import pytest

import vinerun as ov
import vinerun.opset13 as ops
from vinerun import Model, OVAny, PartialShape, RTMap, Tensor
from vinerun.op.util import Variable, VariableInfo


def _chain():
    p = ops.parameter([1], np.float32, name="x")
    r1 = ops.relu(p, name="r1")
    r1.output(0).set_names({"t1"})
    r2 = ops.relu(r1, name="r2")
    return Model(r2, [p], "chain"), r1


@pytest.mark.parametrize("spec", ["t1", ("r1", 0), ["t1"], [("r1", 0)]])
def test_add_outputs_by_name_pair_or_list(spec):
    model, r1 = _chain()
    new = model.add_outputs(spec)
    assert len(new) == 1 and len(model.results) == 2 and new[0] == model.outputs[1]
    assert "t1" in model.outputs[1].get_tensor().names
    assert model.add_outputs(r1.output(0))[0] == model.outputs[1], "an existing Result is reused"


@pytest.mark.parametrize(("spec", "error", "text"), [
    ("nope", RuntimeError, "nope"), (("r1", 7), RuntimeError, "7"), (("zz", 0), RuntimeError, "zz"),
    (3, TypeError, "Incorrect type of a value to add as output."),
    (["t1", 3], TypeError, "Incorrect type of a value to add as output at index 1"),
])
def test_add_outputs_errors(spec, error, text):
    model, _ = _chain()
    with pytest.raises(error, match=text):
        model.add_outputs(spec)


def test_sinks_given_as_outputs_and_empty_assign():
    x = ops.parameter([2, 2], np.float32, name="x")
    rv = ops.read_value("state", np.float32, [2, 2])
    assert rv.get_input_size() == 0 and rv.get_output_element_type(0) == ov.Type.f32
    add = ops.add(rv, x)
    assign = ops.assign(add, "state")
    model = Model(results=[ops.result(add)], sinks=[assign.output(0)], parameters=[x], name="m")
    assert model.get_sinks() == [assign] and model.get_sink_index(assign.output(0)) == 0
    assert len(model.get_variables()) == 1, "ReadValue and Assign of one variable_id share one variable"
    empty = ops.assign()
    assert empty.get_input_size() == 0 and empty.get_output_size() == 0
    with pytest.raises(RuntimeError, match="Variable is not initialized"):
        empty.get_variable_id()
    model.add_sinks([empty])
    assert model.get_sink_index(empty) == 1 and model.get_sink_index(add) == -1
    with pytest.raises(TypeError, match="Sink node is expected"):
        model.get_sink_index("x")
    model.remove_sink(empty)
    extra = Variable(VariableInfo([1], ov.Type.f32, "extra"))
    model.add_variables([extra])
    model.remove_variable(extra)
    assert [v.info.variable_id for v in model.variables] == ["state"]


def test_evaluate_writes_outputs_or_raises():
    a, b = ops.parameter([2, 1], np.float32), ops.parameter([2, 1], np.float32)
    model = Model(ops.add(a, b), [a, b])
    out = Tensor(np.zeros([2, 1], np.float32))
    ins = [Tensor(np.array([[1], [2]], np.float32)), Tensor(np.array([[3], [4]], np.float32))]
    assert model.evaluate([out], ins) is True
    assert np.array_equal(out.data, [[4], [6]])
    with pytest.raises(RuntimeError, match="Cannot evaluate model!"):
        model.evaluate([out], [Tensor(np.zeros([3, 1], np.float32))] * 2)


def test_dynamic_and_validate_messages():
    model, _ = _chain()
    assert model.is_dynamic() is False and model.dynamic is False
    model.reshape([-1])
    assert model.is_dynamic() and model.dynamic
    a, b = ops.parameter([2, 1]), ops.parameter([2, 1])
    m = Model(ops.add(a, b), [a, b])
    m.replace_parameter(0, ops.parameter([3, 7]))
    with pytest.raises(RuntimeError, match="Argument shapes are inconsistent"):
        m.validate_nodes_and_infer_types()


def test_reshape_forms_and_variables():
    p1, p2 = ops.parameter([1, 5], np.float32, name="d1"), ops.parameter([1, 5], np.float32, name="d2")
    rv = ops.read_value(p1, "v", np.float32, [1, 5])
    model = Model(ops.add(rv, p2), [p1, p2])
    model.reshape({0: [2, (1, 9)], "d2": "[2,1..9]"}, {"v": [2, (1, 9)]})
    assert all(i.partial_shape == PartialShape("[2,1..9]") for i in model.inputs)
    assert model.get_variable_by_id("v").info.data_shape == PartialShape("[2,1..9]")
    with pytest.raises(TypeError, match="Incorrect key type"):
        model.reshape({p1: [1, 5]})
    with pytest.raises(TypeError, match="Incorrect value type <class 'range'>"):
        model.reshape({0: range(2)})
    with pytest.raises(TypeError, match="expected values as str"):
        model.reshape({0: [1, 5]}, {0: [1, 5]})


def test_rt_info_paths(tmp_path):
    model, _ = _chain()
    model.set_rt_info("v1", "version")
    model.set_rt_info([1.5, 2.0], ["cfg", "means"])
    model.set_rt_info(True, ["cfg", "flag"])
    assert model.has_rt_info("version") and model.has_rt_info(["cfg", "flag"]) and not model.has_rt_info(["cfg", "x"])
    assert isinstance(model.get_rt_info(), RTMap) and isinstance(model.get_rt_info()["cfg"], dict)
    assert isinstance(model.get_rt_info("version"), OVAny) and model.get_rt_info("version") == "v1"
    with pytest.raises(RuntimeError, match="Path to runtime attribute is incorrect"):
        model.get_rt_info(["cfg", "x"])
    xml = tmp_path / "m.xml"
    ov.save_model(model, xml)
    back = ov.Core().read_model(xml)
    assert back.get_rt_info(["cfg", "means"]).aslist(float) == [1.5, 2.0]
    assert back.get_rt_info(["cfg", "flag"]).astype(bool) is True
    assert set(back.get_rt_info(["cfg"]).astype(dict)) == {"means", "flag"}


def test_copy_refused_deepcopy_clones_and_repr():
    model, _ = _chain()
    with pytest.raises(TypeError, match="Please, use deepcopy instead"):
        copy.copy(model)
    clone = copy.deepcopy(model)
    assert clone is not model and clone.input(0).get_names() == {"x"}
    assert model._get_raw_address() != clone._get_raw_address()
    result = model.get_results()[0].friendly_name  # unnamed outputs are named after their Result
    assert repr(model) == ("<Model: 'chain'\ninputs[\n<ConstOutput: names[x] shape[1] type: f32>\n]\n"
                           f"outputs[\n<ConstOutput: names[{result}] shape[1] type: f32>\n]>")


def _ordered_types(lib, vlib):
    """Three graphs built with ``lib`` (vinerun or openvino): their get_ordered_ops() type names."""
    ops_, Model_ = lib.opset13, lib.Model  # noqa: N806
    info = vlib.VariableInfo()
    info.data_shape, info.data_type, info.variable_id = lib.PartialShape([2, 2]), lib.Type.f32, "h"
    var = vlib.Variable(info)
    a, b = ops_.parameter([2], name="a"), ops_.parameter([2], name="b")
    s = ops_.add(a, b)
    diamond = Model_([ops_.relu(s).output(0), ops_.sigmoid(ops_.multiply(b, s)).output(0)], [a, b])
    p, unused = ops_.parameter([2, 2]), ops_.parameter([3])
    read = ops_.read_value(ops_.constant(np.zeros((2, 2), np.float32)), var)
    stateful = Model_([ops_.tanh(ops_.add(p, read)).output(0)], [ops_.assign(ops_.relu(p), var)], [p, unused], [var])
    q = ops_.parameter([4, 2])
    split = ops_.split(q, 0, 2)
    cat = ops_.concat([ops_.exp(split.output(1)), ops_.abs(split.output(0))], 0)
    multi = Model_([cat.output(0), split.output(0)], [q])
    return [[n.get_type_name() for n in m.get_ordered_ops()] for m in (diamond, stateful, multi)]


def test_ordered_ops_follow_openvinos_sort():
    # OpenVINO pops its roots (results, sinks, parameters) off a stack: parameters last-first, then the
    # last sink's subgraph ... the first result's, each depth first with input 0 first
    assert _ordered_types(ov, ov.op.util) == [
        ["Parameter", "Parameter", "Add", "Multiply", "Sigmoid", "Result", "Relu", "Result"],
        ["Parameter", "Parameter", "Relu", "Assign", "Constant", "ReadValue", "Add", "Tanh", "Result"],
        ["Parameter", "Constant", "Split", "Result", "Exp", "Abs", "Concat", "Result"]]


def test_ordered_ops_match_openvino():
    openvino = pytest.importorskip("openvino")
    import openvino.op.util as ov_util

    assert _ordered_types(ov, ov.op.util) == _ordered_types(openvino, ov_util)


def test_unnamed_inputs_and_outputs_get_their_nodes_names():
    x = ops.parameter([2])
    split = ops.split(x, 0, 2)
    model = Model(split.outputs(), [x])
    assert model.input(0).get_names() == {x.get_friendly_name()}
    assert [o.get_names() for o in model.outputs] == [{r.get_friendly_name()} for r in model.get_results()]
    named = ops.parameter([2], name="named")
    named.output(0).set_names({"kept"})
    assert Model(ops.relu(named), [named]).input(0).get_names() == {"kept"}
