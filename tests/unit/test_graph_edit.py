"""Replacing nodes keeps consumers and tensor names."""

import numpy as np

from vinerun.ir import Constant, Model, Parameter, Type
from vinerun.ir.graph_edit import replace_node
from vinerun.ir.interpreter import run_reference
from vinerun.ops.activations import Relu, Sigmoid


def test_replace_node_moves_consumers_and_names():
    x = Parameter(Type.f32, [3], name="x")
    r = Relu(x)
    r.output(0).set_names({"act"})
    m = Model([r], [x])
    replace_node(r, Sigmoid(x))
    assert m.output(0).get_names() == {"act"}
    assert m.get_results()[0].input_value(0).node.type_name == "Sigmoid"
    out = run_reference(m, [np.zeros(3, np.float32)])[0]
    np.testing.assert_allclose(out, 0.5)
    assert r.output(0).get_target_inputs() == set()
    assert Constant(np.float32(1)).output(0).get_target_inputs() == set()
