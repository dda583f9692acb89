"""OpenVINO IR reader and writer: round trips, constants of every packing, rt_info, state, bodies, errors."""

import re

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import ModelReadError, UnsupportedOpError
from vinerun.frontends.openvino_ir import read_ir, serialize_ir, write_ir
from vinerun.frontends.openvino_ir.codec import decode_tensor, encode_tensor, join_names, split_names
from vinerun.ir import Dimension, Model, PartialShape, Type
from vinerun.ir.interpreter import run_reference
from vinerun.op.util import Variable, VariableInfo
from vinerun.ops.control_flow import BodyOutputDescription, ConcatOutputDescription, MergedInputDescription
from vinerun.ops.loop import Loop


def _tiny() -> Model:
    x = ops.parameter(PartialShape([Dimension(1, 4), 3]), name="x")
    y = ops.matmul(x, np.arange(6, dtype=np.float32).reshape(3, 2), False, False, name="mm")
    z = ops.relu(ops.add(y, np.float32(-4.0)), name="act")
    z.output(0).set_names({"out", "alias,with comma"})
    z.rt_info["fused_names"] = "a,b"
    z.output(0).rt_info["layout"] = "[N,C]"
    m = Model([z], [x], "tiny")
    m.rt_info["framework"] = {"name": "test", "sub": {"k": "v"}}
    m.rt_info["key with space"] = "1"
    return m


def _run(model: Model, *inputs: np.ndarray) -> list[np.ndarray]:
    return run_reference(model, list(inputs))


def test_round_trip_keeps_structure_names_and_rt_info():
    m = _tiny()
    xml, weights = serialize_ir(m)
    assert xml.startswith(b'<?xml version="1.0"?>') and b'version="11"' in xml
    assert b'type="ReLU"' in xml and b'type="Const"' in xml and b'shape="1..4,3"' in xml
    back = read_ir(xml, weights)
    assert back.friendly_name == "tiny"
    assert back.input(0).get_names() == {"x"} and back.input(0).partial_shape == PartialShape([Dimension(1, 4), 3])
    assert back.output(0).get_names() == {"out", "alias,with comma"}
    act = back.get_results()[0].input_value(0).node
    assert act.friendly_name == "act" and act.rt_info["fused_names"] == "a,b"
    assert act.output(0).rt_info["layout"] == "[N,C]"
    assert back.rt_info["framework"] == {"name": "test", "sub": {"k": "v"}}
    assert back.rt_info["key with space"] == "1"
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(_run(back, x)[0], _run(m, x)[0])


def test_parameter_layout_lives_in_port_rt_info():
    x = ops.parameter([1, 3, 4, 4], name="x")
    x.set_layout(ov.Layout("NCHW"))
    xml, weights = serialize_ir(Model([ops.relu(x)], [x]))
    assert b'<attribute name="layout" version="0" layout="[N,C,H,W]" />' in xml
    back = read_ir(xml, weights).get_parameters()[0]
    assert back.get_layout().to_string() == "[N,C,H,W]" and "layout" not in back.output(0).rt_info


def test_write_ir_files_and_read_model(tmp_path):
    m = _tiny()
    ov.save_model(m, tmp_path / "m.xml", compress_to_fp16=False)
    assert (tmp_path / "m.bin").stat().st_size == 6 * 4 + 4
    back = ov.Core().read_model(tmp_path / "m.xml")
    assert back.output(0).get_names() == {"out", "alias,with comma"}
    from_bytes = ov.Core().read_model((tmp_path / "m.xml").read_bytes(), (tmp_path / "m.bin").read_bytes())
    assert [n.type_name for n in from_bytes.get_ordered_ops()] == [n.type_name for n in back.get_ordered_ops()]


def test_compress_to_fp16_adds_decompression_convert():
    x = ops.parameter([2], name="x")
    big = ops.constant(np.array([1e6, 1.0], np.float32), name="big")  # out of f16 range: stays f32
    m = Model([ops.add(ops.add(x, ops.constant(np.array([0.1, 0.2], np.float32), name="w")), big)], [x])
    xml, weights = serialize_ir(m, compress_to_fp16=True)
    text = xml.decode()
    assert 'name="w_compressed" type="Const"' in text and 'element_type="f16"' in text
    assert re.search(r'name="w" type="Convert".*?<attribute name="decompression"', text, re.S)
    assert len(weights) == 2 * 2 + 2 * 4
    back = read_ir(xml, weights)
    conv = next(n for n in back.get_ordered_ops() if n.type_name == "Convert")
    assert "decompression" in conv.rt_info and conv.friendly_name == "w"
    out = _run(back, np.zeros(2, np.float32))[0]
    np.testing.assert_allclose(out, [1e6 + 0.1, 1.2], rtol=1e-3)
    assert out.dtype == np.float32


def test_identical_weights_are_written_once():
    x = ops.parameter([4], name="x")
    w = np.arange(4, dtype=np.float32)
    m = Model([ops.add(ops.multiply(x, ops.constant(w)), ops.constant(w.copy()))], [x])
    _, weights = serialize_ir(m)
    assert len(weights) == 16


@pytest.mark.parametrize("et, values", [
    ("f16", np.array([1.5, -2.25, 65504], np.float16)),
    ("bf16", np.array([1.5, -3.0], ml_dtypes.bfloat16)),
    ("i4", np.array([1, -2, 3, -8, 7], ml_dtypes.int4)),
    ("u4", np.array([1, 15, 3], ml_dtypes.uint4)),
    ("u1", np.array([1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1], np.uint8)),
    ("boolean", np.array([True, False, True])),
    ("i64", np.array([[1, -2], [3, 4]], np.int64)),
    ("string", np.array(["ab", "", "cdé"], dtype=object)),
])
def test_constant_types_round_trip(et, values):
    c = ops.constant(values, dtype=et, name="c")
    assert c.get_output_element_type(0) == Type(et)
    m = Model([c], [], "consts")
    xml, weights = serialize_ir(m)
    back = read_ir(xml, weights).get_results()[0].input_value(0).node
    assert back.get_output_element_type(0) == Type(et)
    assert back.get_value().shape == values.shape
    assert [str(v) for v in back.get_value().reshape(-1)] == [str(v) for v in values.reshape(-1)]


def test_sub_byte_packing_matches_openvino_layout():
    assert encode_tensor(np.array([1, 15, 3], ml_dtypes.uint4), Type.u4) == b"\xf1\x03"  # low nibble first
    assert encode_tensor(np.array([1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1], np.uint8), Type.u1) == b"\x80\x60"  # MSB first
    raw = encode_tensor(np.array(["ab", "cde"], dtype=object), Type.string)
    assert raw == np.array([2, 0, 2, 5], np.int32).tobytes() + b"abcde"
    assert decode_tensor(b"\xe1\x03", Type.i4, [3]).tolist() == [1, -2, 3]


def test_names_escape_commas():
    assert split_names(join_names({"a,b", "c"})) == ["a,b", "c"]


def test_stateful_model_round_trip_and_runs():
    x = ops.parameter([1, 2], name="x")
    var = Variable(VariableInfo(PartialShape([1, 2]), Type.f32, "acc"))
    rv = ops.read_value(np.zeros((1, 2), np.float32), var, name="rv")
    total = ops.add(rv, x, name="total")
    total.output(0).set_names({"total"})
    m = Model([total], [x], "acc", sinks=[ops.assign(total, var, name="store")])
    xml, weights = serialize_ir(m)
    assert b'variable_id="acc"' in xml and b'type="Assign" version="opset6"' in xml
    back = read_ir(xml, weights)
    assert [s.type_name for s in back.get_sinks()] == ["Assign"]
    assert back.get_variables()[0].info.variable_id == "acc"
    req = ov.compile_model(back, "CPU").create_infer_request()
    for expected in (1.0, 2.0, 3.0):
        out = req.infer({"x": np.ones((1, 2), np.float32)})
        np.testing.assert_array_equal(out["total"], np.full((1, 2), expected, np.float32))


def test_loop_body_round_trip():
    bi = ops.parameter([], Type.i64, name="i")
    bx = ops.parameter([2], name="bx")
    acc = ops.add(bx, ops.convert(bi, Type.f32), name="acc")
    body = Model([acc, ops.constant(np.array(True)), ops.unsqueeze(acc, np.array([0], np.int64))], [bi, bx], "body")
    x = ops.parameter([2], name="x")
    loop = Loop(ops.constant(np.array(3, np.int64)), ops.constant(np.array(True)), x, body=body,
                input_descriptions=(MergedInputDescription(2, 1, 0),),
                output_descriptions=(BodyOutputDescription(0, 0), ConcatOutputDescription(2, 1, 0, 1, 1, -1, 0)),
                special_body_ports=[0, 1], name="loop")
    m = Model([loop.output(0), loop.output(1)], [x], "looped")
    xml, weights = serialize_ir(m)
    assert b'purpose="current_iteration"' in xml and b"<back_edges>" in xml
    back = read_ir(xml, weights)
    node = next(n for n in back.get_ordered_ops() if n.type_name == "Loop")
    assert node.special_body_ports == [0, 1] and node.input_descriptions == loop.input_descriptions
    assert node.output_descriptions == loop.output_descriptions
    x0 = np.array([1.0, 2.0], np.float32)
    for a, b in zip(_run(back, x0), _run(m, x0), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(_run(back, x0)[0], x0 + 3)


_V10 = b"""<?xml version="1.0"?>
<net name="legacy" version="10">
  <layers>
    <layer id="0" name="in" type="Parameter" version="opset1">
      <data shape="1,3" element_type="f32"/>
      <output><port id="0" precision="FP32"><dim>1</dim><dim>3</dim></port></output>
    </layer>
    <layer id="1" name="act" type="ReLU" version="opset1">
      <input><port id="0"><dim>1</dim><dim>3</dim></port></input>
      <output><port id="1" precision="FP32"><dim>1</dim><dim>3</dim></port></output>
    </layer>
    <layer id="2" name="out" type="Result" version="opset1">
      <input><port id="0"><dim>1</dim><dim>3</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
    <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
  </edges>
</net>
"""


def test_ir_v10_gets_legacy_tensor_names():
    m = read_ir(_V10)
    assert m.input(0).get_names() == {"in"} and m.output(0).get_names() == {"act"}
    np.testing.assert_array_equal(_run(m, np.array([[-1, 0, 2]], np.float32))[0], [[0, 0, 2]])


def test_enum_attributes_written_upper_case_are_accepted():
    gelu = b'type="Gelu" version="opset7"><data approximation_mode="TANH"/>'
    node = read_ir(_V10.replace(b'type="ReLU" version="opset1">', gelu)).get_results()[0].input_value(0).node
    assert node.approximation_mode.upper() == "TANH"


def test_errors_name_the_file_and_layer(tmp_path):
    with pytest.raises(ModelReadError, match="XML parse error"):
        read_ir(b"<net version='11'><layers>")
    with pytest.raises(ModelReadError, match="IR version '7' is not supported"):
        read_ir(_V10.replace(b'version="10"', b'version="7"'))
    bad_type = _V10.replace(b'type="ReLU"', b'type="NoSuchOp"')
    with pytest.raises(UnsupportedOpError, match=r"layer id=1 name='act' type='NoSuchOp'.*NoSuchOp"):
        read_ir(bad_type)
    bad_attr = _V10.replace(b'version="opset1">\n      <input>', b'version="opset1"><data bogus="1"/>\n      <input>')
    with pytest.raises(UnsupportedOpError, match="attribute 'bogus'"):
        read_ir(bad_attr)
    m = _tiny()
    write_ir(m, tmp_path / "m.xml", tmp_path / "m.bin")
    (tmp_path / "m.bin").write_bytes((tmp_path / "m.bin").read_bytes()[:10])
    with pytest.raises(ModelReadError, match=r"m\.xml: layer id=\d+ name='Constant_\d+' type='Const'.*only 10 bytes"):
        read_ir(tmp_path / "m.xml")
    (tmp_path / "m.bin").unlink()
    with pytest.raises(ModelReadError, match="no weights"):
        read_ir(tmp_path / "m.xml")
    with pytest.raises(ModelReadError, match="does not exist"):
        read_ir(tmp_path / "m.xml", tmp_path / "missing.bin")
    with pytest.raises(ModelReadError, match="Cannot read IR file"):
        read_ir(tmp_path / "absent.xml")
