"""OpenVINO's graph-building API on vinerun: node operators, builder keywords and aliases, op classes,
``evaluate`` on Tensors, index containers, layout helpers and ``utils.types``."""

import numpy as np
import pytest

import vinerun as ov
import vinerun.opset8 as ops8
import vinerun.opset13 as ops
from vinerun import layout_helpers
from vinerun.errors import ValidationError
from vinerun.op import Constant, Parameter
from vinerun.utils.types import get_dtype, get_element_type, get_element_type_str, make_constant_node


def _param(shape=(2, 2), dtype=np.float32, name=None):
    return ops.parameter(list(shape), dtype=dtype, name=name)


@pytest.mark.parametrize(("expr", "type_name"), [
    (lambda a, b: a + b, "Add"), (lambda a, b: a - b, "Subtract"),
    (lambda a, b: a * b, "Multiply"), (lambda a, b: a / b, "Divide"),
])
def test_operators_on_nodes_build_elementwise_nodes(expr, type_name):
    a, b = _param(name="a"), _param(name="b")
    node = expr(a, b)
    assert node.get_type_name() == type_name
    assert [v.get_node() for v in node.input_values()] == [a, b]
    assert node.get_output_element_type(0) == ov.Type.f32


def test_operators_with_arrays_on_either_side():
    a = _param()
    arr = np.full((2, 2), 3, np.float32)
    left, right = arr - a, a - arr
    assert left.get_type_name() == right.get_type_name() == "Subtract"
    assert left.input_value(0).get_node().get_type_name() == "Constant"
    assert right.input_value(1).get_node().get_type_name() == "Constant"
    assert (np.float32(2) * a).get_type_name() == "Multiply"


def test_operators_follow_openvino_limits():
    a = _param()
    with pytest.raises(TypeError):
        _ = a.output(0) + a  # OpenVINO defines the operators on nodes only
    with pytest.raises(TypeError):
        _ = -a
    assert (a == a) is True  # identity, not an Equal node
    with pytest.raises(ValidationError):
        _ = a + np.ones((2, 2), np.int64)  # element types must agree, as in OpenVINO


def test_type_info():
    node = ops.sin(_param())
    info = node.get_type_info()
    assert info.name == node.type_info.name == "Sin"
    assert info.version_id == "opset1"
    assert info == ops.sin(_param()).get_type_info()
    assert info != ops.cos(_param()).get_type_info()


def test_evaluate_into_output_tensors():
    node = ops.add(np.array([1, 2, 3]), np.array([4, 5, 6]))
    out = ov.Tensor(np.zeros(3, np.int64))
    inputs = [ov.Tensor(np.array([1, 2, 3])), ov.Tensor(np.array([10, 20, 30]))]
    assert node.evaluate([out], inputs) is True
    assert out.data.tolist() == [11, 22, 33]
    # vinerun's own form still works
    assert node.evaluate([np.array([1]), np.array([2])])[0].tolist() == [3]
    # a node without a reference computation answers False
    assert _param().evaluate([ov.Tensor(np.zeros((2, 2), np.float32))], []) is False


def test_descriptor_tensors():
    from vinerun._pyopenvino import DescriptorTensor

    a = _param(name="a")
    node = ops.relu(a)
    t = node.get_input_tensor(0)
    assert isinstance(t, DescriptorTensor)
    assert t.get_names() == {"a"}
    assert list(t.get_shape()) == [2, 2]
    assert node.get_output_tensor(0).get_element_type() == ov.Type.f32


def test_constant_forms():
    c = Constant(ov.Type.f32, ov.Shape([3, 3]), list(range(9)))
    assert list(c.get_output_shape(0)) == [3, 3] and c.get_byte_size() == 36
    assert Constant(ov.Type.i32, [2, 2], [7]).get_vector() == [7, 7, 7, 7]
    with pytest.raises(Exception, match="do not fill"):
        Constant(ov.Type.i32, [2, 2], [1, 2, 3])
    arr = np.arange(4, dtype=np.float32)
    shared, copied = Constant(arr, shared_memory=True), Constant(arr, shared_memory=False)
    arr[0] = 42
    assert shared.data[0] == 42 and copied.data[0] == 0
    empty = Constant(np.array([], dtype=np.int32), shared_memory=False)
    assert tuple(empty.shape) == (0,) and empty.get_element_type() == ov.Type.i32
    assert Constant(ov.Tensor(np.ones(2, np.float32))).get_vector() == [1.0, 1.0]
    with pytest.raises(ValueError):
        ops8.constant(None)
    assert ops8.constant(np.arange(9).reshape(3, 3), np.float32).get_output_element_type(0) == ov.Type.f32


def test_builders_take_openvino_keyword_names():
    data = _param((4, 4))
    split = ops.split(data=data, axis=1, num_splits=2)
    assert [list(o.get_shape()) for o in split.outputs()] == [[4, 2], [4, 2]]
    add = ops.add(left_node=data, right_node=data, auto_broadcast="numpy")
    assert add.get_type_name() == "Add"
    assert ops.transpose(data=data, input_order=[1, 0]).get_type_name() == "Transpose"
    assert ops.reshape(node=data, output_shape=[16], special_zero=False).get_output_shape(0) == [16]


def test_builder_aliases_and_hsigmoid():
    x = np.array([-4.0, 0.0, 1.5], np.float32)
    assert ops.absolute(x).get_type_name() == "Abs"
    assert ops.ceil(x).get_type_name() == "Ceiling"
    assert ops.cum_sum(x, 0).get_type_name() == "CumSum"
    node = ops.hsigmoid(x)
    assert node.get_type_name() == "HSigmoid"
    np.testing.assert_allclose(node.evaluate([x])[0], np.clip(x + 3, 0, 6) / 6)


def test_index_containers():
    s = ov.Strides(np.array([1, 2, 3]))
    s[1] = 5
    assert list(s) == [1, 5, 3] and len(s) == 3 and np.equal(s, [1, 5, 3]).all()
    with pytest.raises(TypeError):
        ov.Strides([-1])
    assert list(ov.CoordinateDiff([-1, 2])) == [-1, 2]
    assert list(ov.AxisVector([2, 0])) == [2, 0] and list(ov.Coordinate((0, 1))) == [0, 1]
    axes = ov.AxisSet([3, 1, 2, 1])
    assert len(axes) == 3 and list(axes) == [1, 2, 3] and 2 in axes


def test_layout_helpers():
    nchw = ov.Layout("NCHW")
    assert layout_helpers.has_batch(nchw) and layout_helpers.channels_idx(nchw) == 1
    assert layout_helpers.height_idx(nchw) == 2 and not layout_helpers.has_depth(nchw)
    with pytest.raises(RuntimeError):
        layout_helpers.depth_idx(nchw)
    a = _param(name="a")
    model = ov.Model(ops.relu(a), [a])
    assert layout_helpers.get_layout(model.input(0)) == ov.Layout()
    layout_helpers.set_layout(model.input(0), ov.Layout("NC"))
    assert layout_helpers.get_layout(model.input(0)) == ov.Layout("NC")


def test_utils_types():
    assert get_element_type(np.float32) == ov.Type.f32
    assert get_element_type(int) == ov.Type.i32 and get_element_type(float) == ov.Type.f32
    assert get_element_type_str(np.uint8) == "u8"
    assert get_dtype(ov.Type.i64) == np.dtype(np.int64)
    with pytest.raises(TypeError):
        get_element_type(object)
    const = make_constant_node([1, 2], np.float32, name="c")
    assert const.get_output_element_type(0) == ov.Type.f32 and const.friendly_name.startswith("c/")


def test_ordered_ops_are_topological_and_keep_unused_parameters():
    a, b, c, unused = (_param(name=n) for n in "abcu")
    model = ov.Model([ops.relu(b), (a + b) * c], [a, b, c, unused])
    order = model.get_ordered_ops()
    position = {id(n): i for i, n in enumerate(order)}
    assert len(order) == 9
    assert [n.friendly_name for n in order[:4]] == ["u", "c", "b", "a"]  # parameters first, as OpenVINO's
    for node in order:
        assert all(position[id(v.get_node())] < position[id(node)] for v in node.input_values())


def test_read_value_forms():
    rv = ops.read_value("v0", np.float32, [2, 2])
    assert rv.get_output_element_type(0) == ov.Type.f32 and list(rv.get_output_shape(0)) == [2, 2]
    rv = ops.read_value(np.zeros((2, 2), np.float32), "v1")
    assert rv.get_variable_id() == "v1" and list(rv.get_output_shape(0)) == [2, 2]
    info = ov.op.util.VariableInfo()
    info.data_shape, info.data_type, info.variable_id = ov.PartialShape([1]), ov.Type.f32, "v2"
    var = ov.op.util.Variable(info)
    assert ops.read_value(var).get_variable_id() == "v2"
    with pytest.raises(TypeError):
        ops.read_value(np.zeros(1, np.float32))


def test_parameter_shape_and_model_ports_by_keyword():
    a = _param(name="a")
    assert a.partial_shape == ov.PartialShape([2, 2])
    model = ov.Model(ops.relu(a), [a])
    a.set_partial_shape(ov.PartialShape([3, 4]))
    assert a.get_partial_shape() == ov.PartialShape([3, 4])  # before types are re-inferred
    assert model.input(tensor_name="a").get_node() is a
    assert model.output(index=0).get_node().get_type_name() == "Result"


def test_pyopenvino_module_alias():
    import vinerun._pyopenvino as binding

    assert binding.Model is ov.Model
    assert isinstance(ops.relu(_param()).get_input_tensor(0), binding.DescriptorTensor)
    assert isinstance(_param(), Parameter)


def test_constant_keyword_forms_and_sharing():
    arr = np.ones((2, 3), np.float32)
    assert np.shares_memory(arr, Constant(array=arr, shared_memory=True).data)
    tensor = ov.Tensor(arr, shared_memory=True)
    assert np.shares_memory(arr, Constant(tensor=tensor, shared_memory=True).data)
    assert not np.shares_memory(arr, Constant(tensor=tensor, shared_memory=False).data)
    with pytest.raises(RuntimeError, match="SHARED MEMORY MODE FOR THIS CONSTANT IS NOT APPLICABLE"):
        Constant(array=np.asfortranarray(np.ones((2, 3))), shared_memory=True)


def test_model_from_a_multi_output_node_and_utils_attribute():
    params = [_param((1,), np.uint8) for _ in range(3)]
    model = ov.Model(ops.split(ops.concat(params, 0), 0, 3), params)
    assert len(model.outputs) == 3
    assert ov.utils.types.get_dtype(ov.Type.f16) == np.float16


def test_result_layout_and_constant_views():
    res = ops.result(_param())
    assert res.get_layout() == ov.Layout()
    res.set_layout("NC")
    assert res.layout == ov.Layout("NC")
    c = ops.constant(np.ones((2, 3), np.float32))
    assert list(c.get_strides()) == [12, 4] and c.get_value_strings()[0] == "1.0"
    assert np.shares_memory(c.get_tensor_view().data, c.data)


def test_op_util_port_descriptions():
    from vinerun.op import util

    d = util.SliceInputDescription(0, 1, 0, 1, 1, -1, 1)
    assert (d.input_index, d.body_parameter_index, d.part_size, d.axis) == (0, 1, 1, 1)
    assert util.BodyOutputDescription(1, 0).iteration == -1
    assert util.MergedInputDescription(0, 1, 2).body_value_index == 2
