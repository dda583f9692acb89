"""OpenVINO's ``openvino.passes`` on vinerun: Manager, ready passes, user passes and the pattern matcher."""

import numpy as np
import pytest

import vinerun as ov
import vinerun.opset13 as ops
from vinerun.frontends.openvino_ir import read_ir
from vinerun.ir.graph_edit import replace_node
from vinerun.passes import (
    AnyInput,
    ConstantFolding,
    GraphRewrite,
    Manager,
    Matcher,
    MatcherPass,
    ModelPass,
    Optional,
    Or,
    Serialize,
    Version,
    WrapType,
    consumers_count,
    type_matches,
)
from vinerun.transformations import DeadCodeElimination


def _types(model):
    return [n.get_type_name() for n in model.get_ordered_ops()]


def test_constant_folding_through_the_manager():
    const = ops.constant(np.array([[0.0, 0.1, -0.1], [-2.5, 2.5, 3.0]], np.float32))
    model = ov.Model(ops.ceiling(const), [], "m")
    manager = Manager()
    assert isinstance(manager.register_pass(ConstantFolding()), ConstantFolding)
    assert manager.run_passes(model) is None
    assert _types(model) == ["Constant", "Result"]
    folded = model.get_results()[0].input(0).get_source_output().get_node()
    assert folded.get_vector() == [0.0, 1.0, -0.0, -2.0, 3.0, 3.0]


def test_serialize_writes_ir(tmp_path):
    a = ops.parameter([2, 2], np.float32, name="a")
    model = ov.Model((a + a) * a, [a], "m")
    xml, weights = tmp_path / "m.xml", tmp_path / "m.bin"
    manager = Manager()
    manager.register_pass(Serialize(str(xml), path_to_bin=str(weights), version=Version.IR_V11))
    manager.run_passes(model)
    back = read_ir(str(xml), str(weights))
    assert _types(back) == _types(model)


def test_serialize_arguments():
    with pytest.raises(TypeError, match="Invoked with:"):
        Serialize(path_to_xml="a.xml", path_to_bin="a.bin", model=5)
    with pytest.raises(TypeError):
        Serialize("a.xml")
    assert Serialize("a.xml", "a.bin", "IR_V11").version == Version.IR_V11
    assert (Version.UNSPECIFIED, Version.IR_V10, Version.IR_V11) == (0, 10, 11)
    with pytest.raises(NotImplementedError):
        Serialize("a.xml", "a.bin", Version.IR_V10)


def test_user_model_pass_and_vinerun_passes_in_one_manager():
    seen = []

    class Rename(ModelPass):
        def run_on_model(self, model):
            seen.append(model.get_friendly_name())
            model.set_friendly_name("renamed")
            return False

    a = ops.parameter([2], np.float32)
    dead = ops.relu(a)  # noqa: F841  (not reachable from the result)
    model = ov.Model(ops.sigmoid(a), [a], "orig")
    manager = Manager()
    p = manager.register_pass(Rename())
    p.set_name("rename")
    manager.register_pass(DeadCodeElimination())
    manager.run_passes(model)
    assert seen == ["orig"] and model.get_friendly_name() == "renamed" and p.get_name() == "rename"


def test_matcher_records_pattern_values():
    x = AnyInput()
    relu = WrapType("opset1::Relu", x)
    a = ops.parameter([2], np.float32)
    node = ops.relu(a)
    m = Matcher(relu, "relu")
    assert m.match(node.output(0))
    assert m.get_match_root() is node
    assert m.get_pattern_value_map()[x] == a.output(0)
    assert m.get_match_nodes() == [node]
    assert not m.match(ops.sigmoid(a))


def test_or_optional_and_predicates():
    a = ops.parameter([2], np.float32)
    b = ops.parameter([2], np.int32)
    act = Or([WrapType("Relu", AnyInput()), WrapType(["Sigmoid", "Tanh"], AnyInput())])
    assert Matcher(act).match(ops.tanh(a)) and not Matcher(act).match(ops.abs(a))
    maybe_neg = Optional(["Negative"], WrapType("Parameter"))
    assert Matcher(maybe_neg).match(ops.negative(a)) and Matcher(maybe_neg).match(a)
    f32_only = WrapType("Parameter", type_matches(ov.Type.f32))
    assert Matcher(f32_only).match(a) and not Matcher(f32_only).match(b)
    ops.relu(a)
    assert Matcher(AnyInput(consumers_count(4))).match(a.output(0))


def test_matcher_pass_rewrites_through_graph_rewrite():
    class ReluToSigmoid(MatcherPass):
        def __init__(self):
            super().__init__()
            x = AnyInput()
            relu = WrapType("opset13::Relu", x)

            def callback(m):
                old = m.get_match_root()
                new = ops.sigmoid(m.get_pattern_value_map()[x])
                replace_node(old, new)
                self.register_new_node(new)
                return True

            self.register_matcher(Matcher(relu, "ReluToSigmoid"), callback)

    a = ops.parameter([2], np.float32)
    model = ov.Model(ops.relu(ops.relu(a)), [a])
    rewrite = GraphRewrite()
    rewrite.add_matcher(ReluToSigmoid())
    manager = Manager()
    manager.register_pass(rewrite)
    manager.run_passes(model)
    assert _types(model) == ["Parameter", "Sigmoid", "Sigmoid", "Result"]
    assert ReluToSigmoid().get_name() == "ReluToSigmoid"
