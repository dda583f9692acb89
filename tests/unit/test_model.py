"""Model structure, editing, clone and reshape."""

import numpy as np
import pytest

from vinerun.errors import ValidationError
from vinerun.ir import Constant, Model, Parameter, PartialShape, Type
from vinerun.ir.interpreter import run_reference
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add
from vinerun.ops.matmul import MatMul


def _model() -> Model:
    x = Parameter(Type.f32, [-1, 3], name="x")
    x.output(0).set_names({"x"})
    y = MatMul(x, Constant(np.ones((3, 2), np.float32)), name="mm")
    z = Relu(Add(y, Constant(np.float32(-4.0))), name="act")
    z.output(0).set_names({"out"})
    return Model([z], [x], "tiny")


def test_ports_by_index_and_name():
    m = _model()
    assert m.input("x") is not None and m.input(0) == m.inputs[0]
    assert m.output("out").partial_shape == PartialShape([-1, 2])
    with pytest.raises(RuntimeError, match="no input named 'nope'"):
        m.input("nope")


def test_ordered_ops_put_producers_first():
    order = [n.type_name for n in _model().get_ordered_ops()]
    assert order.index("MatMul") < order.index("Add") < order.index("Relu") < order.index("Result")


def test_reshape_reinfers_shapes():
    m = _model()
    m.reshape([5, 3])
    assert m.output(0).partial_shape == PartialShape([5, 2])


def test_clone_is_independent():
    m = _model()
    c = m.clone()
    c.reshape({"x": [7, 3]})
    assert m.output(0).partial_shape == PartialShape([-1, 2])
    assert c.output(0).partial_shape == PartialShape([7, 2])
    assert c.output(0).get_names() == {"out"}


def test_add_outputs_by_node_name():
    m = _model()
    m.add_outputs([("mm", 0)])
    assert len(m.outputs) == 2
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out, mm = run_reference(m, [x])
    np.testing.assert_allclose(mm, x @ np.ones((3, 2), np.float32))
    np.testing.assert_allclose(out, np.maximum(mm - 4, 0))


def test_incompatible_shapes_name_the_node():
    a = Parameter(Type.f32, [2, 3])
    b = Parameter(Type.f32, [4, 5])
    with pytest.raises(ValidationError, match="MatMul 'bad'"):
        MatMul(a, b, name="bad")


def test_unlisted_parameter_is_rejected():
    a = Parameter(Type.f32, [2], name="a")
    b = Parameter(Type.f32, [2], name="b")
    with pytest.raises(ValidationError, match="Parameter 'b'"):
        Model([Add(a, b)], [a])
