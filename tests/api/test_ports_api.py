"""Output / Input ports, their descriptor tensors and runtime info, as OpenVINO's Python API has them."""

import copy

import numpy as np
import pytest
from vinerun._pyopenvino import DescriptorTensor

import vinerun as ov
import vinerun.opset13 as ops
from vinerun import ConstOutput, Output, OVAny, RTMap, Symbol, Tensor, Type


def test_descriptor_tensor_names_shape_and_size():
    p = ops.parameter([2, 3], Type.f16, name="x")
    t = p.output(0).get_tensor()
    assert isinstance(t, DescriptorTensor) and isinstance(p.output(0).tensor, DescriptorTensor)
    assert t.get_names() == {"x"} and t.any_name == "x"
    t.names = {"a", "b"}
    t.add_names({"c"})
    assert p.output(0).get_names() == {"a", "b", "c"} and p.get_output_tensor(0).get_any_name() == "a"
    assert t.size == 12  # bytes: 6 f16 elements
    assert t.element_type == Type.f16 and t.partial_shape == ov.PartialShape([2, 3]) and t.shape == [2, 3]
    assert repr(t) == "<DescriptorTensor: names[a, b, c] shape[2,3] type: f16>"


def test_descriptor_tensor_bounds_and_value_symbols():
    t = ops.parameter([1, 3], Type.i64).output(0).get_tensor()
    assert t.get_lower_value() is None and t.get_value_symbol() == []
    lo, hi = Tensor(np.zeros([1, 3], np.int64)), Tensor(np.full([1, 3], 7, np.int64))
    t.set_lower_value(lo)
    t.set_upper_value(hi)
    assert t.get_lower_value() is lo and np.array_equal(t.get_upper_value().data, hi.data)
    with pytest.raises(RuntimeError):
        t.set_lower_value(Tensor(np.zeros([4], np.int64)))
    syms = [Symbol(), Symbol(), Symbol()]
    t.set_value_symbol(syms)
    assert t.get_value_symbol() == syms


def test_input_reads_the_source_tensor():
    p = ops.parameter([4], name="x")
    relu = ops.relu(p)
    assert relu.input(0).get_tensor().get_names() == {"x"}
    assert relu.get_input_tensor(0).get_names() == {"x"}


def test_replace_moves_names_and_keeps_the_replacements_own_consumers():
    p = ops.parameter([4], name="x")
    old = ops.relu(p)
    old.output(0).set_names({"y"})
    consumer = ops.negative(old)
    new = ops.relu(old)  # reads the output being replaced: that input must stay as it is
    old.output(0).replace(new.output(0))
    assert consumer.input_value(0) == new.output(0)
    assert new.input_value(0) == old.output(0)
    assert new.output(0).get_names() == {"y"}


def test_replace_source_output_keeps_names_and_remove_target_input():
    a, b = ops.parameter([2], name="a"), ops.parameter([2], name="b")
    relu = ops.relu(a)
    relu.input(0).replace_source_output(b.output(0))
    assert a.output(0).get_names() == {"a"} and b.output(0).get_names() == {"b"}
    assert relu.input(0) in b.output(0).get_target_inputs() and not a.output(0).target_inputs
    b.output(0).remove_target_input(relu.input(0))
    assert not b.output(0).get_target_inputs()


def test_output_ordering_hash_copy_and_deepcopy():
    split = ops.split(ops.parameter([4]), 0, 2)
    first, second = split.outputs()
    assert first < second and second > first and first <= split.output(0) and first == split.output(0)
    assert hash(first) == hash(split.output(0))
    dup = copy.copy(first)
    assert dup == first and dup is not first and dup.get_node() is first.get_node()
    dup.flag = 1  # handles take attributes of their own
    assert not hasattr(first, "flag")
    with pytest.raises(TypeError, match="Cannot deepcopy 'openvino.Output' object."):
        copy.deepcopy(first)
    assert Output._from_node(split) == first


def test_rt_info_of_ports_and_nodes_is_an_rtmap_of_ovany():
    relu = ops.relu(ops.parameter([2]))
    for rt in (relu.output(0).get_rt_info(), relu.input(0).rt_info, relu.get_rt_info()):
        assert isinstance(rt, RTMap) and not rt
        rt["k"] = "v"
        rt["n"] = 3
    out_rt = relu.output(0).rt_info
    assert set(out_rt) == {"k", "n"} and len(out_rt) == 2 and "k" in out_rt
    assert all(isinstance(v, OVAny) for _, v in out_rt.items())
    assert out_rt["k"] == "v" and out_rt["n"].astype(int) == 3 and out_rt["k"].value == "v"
    del out_rt["k"]
    assert list(relu.output(0).get_rt_info().keys()) == ["n"]


def test_ovany_conversions():
    assert OVAny("3.5").astype(float) == 3.5 and OVAny(True).astype(str) == "YES"
    assert OVAny("yes").astype(bool) is True and OVAny(7).astype(str) == "7"
    assert OVAny("1 2 3").aslist(int) == [1, 2, 3] and OVAny(["a", "b"]).aslist(str) == ["a", "b"]
    assert OVAny([1]).aslist() == [] and OVAny({"a": 1}).astype(dict)["a"] == OVAny(1)
    assert OVAny("a") == OVAny("a") and repr(OVAny(1)) == "<OVAny class>"
    with pytest.raises(RuntimeError, match="Unsupported data type"):
        OVAny(1).astype(list)


def test_compiled_model_ports_are_const_outputs():
    p = ops.parameter([1, 2], name="data")
    model = ov.Model(ops.relu(p), [p])
    compiled = ov.Core().compile_model(model, "CPU")
    port = compiled.input("data")
    assert isinstance(port, ConstOutput) and isinstance(port, Output) and port.get_names() == {"data"}
    assert port == compiled.inputs[0] and hash(port) == hash(compiled.inputs[0])
    assert port.__doc__ == "openvino.ConstOutput represents port/node output."
    assert all(isinstance(o, ConstOutput) for o in compiled.outputs)
    assert isinstance(compiled.output(0).get_target_inputs(), set)
