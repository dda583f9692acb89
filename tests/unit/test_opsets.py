"""The opsetN builder modules and ``vinerun.op``: names, membership, OpenVINO signatures, constants."""

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset1, opset13
from vinerun.errors import ValidationError
from vinerun.ir import Model, Type
from vinerun.ir.interpreter import run_reference
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import all_ops
from vinerun.opsets import opset_table
from vinerun.opsets._factory import OpFactory, python_name


@pytest.mark.parametrize("type_name, name", [
    ("LSTMSequence", "lstm_sequence"), ("MatMul", "matmul"), ("ShapeOf", "shape_of"), ("TopK", "topk"),
    ("ScatterNDUpdate", "scatter_nd_update"), ("ReduceL2", "reduce_l2"), ("IsNaN", "is_nan"), ("If", "if_op"),
    ("MVN", "mvn"), ("GroupConvolution", "group_convolution"), ("BatchNormInference", "batch_norm_inference"),
])
def test_python_names(type_name, name):
    assert python_name(type_name) == name


def test_opsets_hold_the_newest_version_not_newer_than_n():
    for n in (1, 8, 13, 16):
        table = opset_table(n)
        for fn in table.values():
            cls = getattr(fn, "cls", None)
            if cls is not None:
                assert int(cls.version[len("opset"):]) <= n
    onnx_only = {python_name(t) for (t, v) in all_ops() if v == "onnx"}
    assert not onnx_only & {k for k, f in opset_table(16).items() if getattr(f, "cls", None) is not None
                            and f.cls.version == "onnx"}
    assert "parameter" in dir(opset1) and "read_value" not in dir(opset1)
    with pytest.raises(AttributeError, match="vinerun.opset1"):
        opset1.read_value  # noqa: B018 - opset3 introduced it
    assert ov.opset13.relu is opset13.relu


def test_generated_builder_from_a_class_not_in_any_list():
    class Scale(Node):
        type_name, version, num_inputs = "ScaleForTest", "opset16", (1, 2)
        factor = Attr("float", 2.0)
        mode = Attr("str", "fast")

        def infer(self):
            return [(self.get_input_element_type(0), self.get_input_partial_shape(0))]

    make = OpFactory(Scale)
    assert make.__name__ == "scale_for_test"
    assert list(make.__signature__.parameters) == ["arg0", "arg1", "factor", "mode", "name"]
    node = make(opset13.parameter([2]), factor=3, mode="FAST", name="s")
    assert node.factor == 3.0 and node.mode == "fast" and node.friendly_name == "s" and node.get_input_size() == 1
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        make(opset13.parameter([2]), nope=1)
    with pytest.raises(TypeError, match="missing required argument"):
        make()


def test_model_docstring_example():
    p = opset13.parameter([1, 4], name="x")
    m = Model([opset13.relu(p)], [p], "relu")
    assert m.input().get_any_name() == "x" and m.output(0).partial_shape == [1, 4]


def test_openvino_style_calls():
    ops = opset13
    x = ops.parameter([1, 3, 8, 8], dtype=np.float32, name="x")
    w = ops.constant(np.ones((4, 3, 3, 3), np.float32))
    conv = ops.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1], auto_pad="EXPLICIT")
    assert conv.shape == [1, 4, 8, 8]
    pooled = ops.max_pool(conv, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2])
    assert pooled.get_output_partial_shape(0) == [1, 4, 4, 4]
    avg = ops.avg_pool(conv, strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0], kernel_shape=[2, 2], exclude_pad=True)
    assert avg.shape == [1, 4, 4, 4]
    assert ops.clamp(x, min_value=0.0, max_value=1.0).max == 1.0
    assert ops.concat([x, x], 1).shape == [1, 6, 8, 8]
    assert ops.reshape(x, [0, -1], True).shape == [1, 192]
    assert ops.softmax(x, -1).shape == [1, 3, 8, 8]
    assert ops.matmul(ops.parameter([2, 3]), ops.parameter([4, 3]), False, True).shape == [2, 4]
    assert ops.is_inf(x, {"detect_negative": False}).detect_negative is False


def test_plain_values_follow_the_node_input_type():
    h = opset13.parameter([2], Type.f16, name="h")
    assert opset13.add(h, 1.5).get_input_element_type(1) == Type.f16
    i = opset13.parameter([2], Type.i32, name="i")
    assert opset13.multiply(i, [2, 3]).get_input_element_type(1) == Type.i32
    with pytest.raises(ValidationError):
        opset13.add(opset13.parameter([2]), np.ones(2, np.float64))  # arrays keep their dtype


def test_constant_and_op_namespace():
    c = opset13.constant([1, 2, 3], dtype=Type.i8, name="c")
    assert c.get_output_element_type(0) == Type.i8 and c.friendly_name == "c"
    assert ov.op.Constant(np.zeros(2, np.float32)).get_output_element_type(0) == Type.f32
    p = ov.op.Parameter(Type.f32, ov.PartialShape([1, -1]))
    assert p.get_output_partial_shape(0) == ov.PartialShape([1, -1])


def test_read_value_assign_builders():
    var = ov.op.util.Variable(ov.op.util.VariableInfo([2], Type.f32, "v"))
    x = opset13.parameter([2], name="x")
    rv = opset13.read_value(np.zeros(2, np.float32), var)
    out = opset13.add(rv, x)
    m = Model([out], [x], sinks=[opset13.assign(out, var)])
    assert m.get_variables()[0] is var
    state: dict = {}
    for expected in (1.0, 2.0):
        np.testing.assert_array_equal(run_reference(m, [np.ones(2, np.float32)], state)[0], [expected] * 2)
    by_id = opset13.read_value(np.zeros(2, np.float32), "w", Type.f32, [2])
    assert by_id.get_variable_id() == "w" and by_id.variable.info.data_shape == [2]
    assert opset13.read_value(var).get_output_partial_shape(0) == [2]
