"""CompiledModel.export_model / Core.import_model: exact round trips and a header that is checked."""

import io
import json
import re
import struct

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import BlobError, DeviceError, ModelReadError, UnsupportedOpError
from vinerun.ir import Model, PartialShape, Type
from vinerun.models.cnn import cnn_inputs, cnn_model
from vinerun.op.util import Variable, VariableInfo
from vinerun.runtime import blob as blobfmt


@pytest.fixture(scope="module")
def compiled():
    return ov.Core().compile_model(cnn_model(), "CPU")


def _ports(c):
    return [(sorted(o.get_names()), o.partial_shape, o.element_type) for o in (*c.inputs, *c.outputs)]


def _rewrite_header(data: bytes, **changes) -> bytes:
    """The same blob with header fields changed (as another vinerun version or device would write them)."""
    magic, version, reserved, n = struct.unpack_from("<8sHHI", data, 0)
    header = json.loads(data[16:16 + n])
    header.update(changes)
    head = json.dumps(header).encode()
    return struct.pack("<8sHHI", magic, version, reserved, len(head)) + head + data[16 + n:]


def test_round_trip_gives_identical_outputs_and_ports(compiled):
    core = ov.Core()
    exported = compiled.export_model()
    assert isinstance(exported, io.BytesIO)
    imported = core.import_model(exported, "CPU")
    x = cnn_inputs()["image"]
    assert np.array_equal(imported(x)[0], compiled(x)[0])
    assert _ports(imported) == _ports(compiled)
    assert imported.get_property("NETWORK_NAME") == "cnn"
    assert imported.get_property("LOADED_FROM_CACHE") is False  # as in OpenVINO: only CACHE_DIR sets it


def test_export_to_a_stream_writes_and_rewinds(compiled):
    stream = io.BytesIO()
    assert compiled.export_model(stream) is None
    assert stream.tell() == 0
    data = stream.getvalue()
    assert data[:8] == blobfmt.MAGIC
    assert data == compiled.export_model().getvalue()  # deterministic
    imported = ov.Core().import_model(data, "CPU.0")  # plain bytes and a device index work too
    x = cnn_inputs(seed=5)["image"]
    assert np.array_equal(imported(x)[0], compiled(x)[0])


def test_the_exported_config_comes_back_and_import_config_overrides_it():
    core = ov.Core()
    c = core.compile_model(cnn_model(), "CPU", {"PERFORMANCE_HINT": "THROUGHPUT", "PERF_COUNT": True})
    data = c.export_model().getvalue()
    back = core.import_model(data, "CPU")
    assert str(back.get_property("PERFORMANCE_HINT")).endswith("THROUGHPUT")
    assert back.get_property("PERF_COUNT") is True
    assert core.import_model(data, "CPU", {"PERF_COUNT": False}).get_property("PERF_COUNT") is False


def test_stateful_model_round_trip_keeps_its_state_semantics():
    x = ops.parameter([1, 2], name="x")
    var = Variable(VariableInfo(PartialShape([1, 2]), Type.f32, "acc"))
    total = ops.add(ops.read_value(np.zeros((1, 2), np.float32), var, name="rv"), x, name="total")
    total.output(0).set_names({"total"})
    m = Model([total], [x], "acc", sinks=[ops.assign(total, var, name="store")])
    core = ov.Core()
    req = core.import_model(core.compile_model(m, "CPU").export_model(), "CPU").create_infer_request()
    for expected in (1.0, 2.0, 3.0):
        out = req.infer({"x": np.ones((1, 2), np.float32)})
        np.testing.assert_array_equal(out["total"], np.full((1, 2), expected, np.float32))


def test_wrong_magic_is_refused(compiled):
    with pytest.raises(BlobError, match="not a vinerun compiled-model blob"):
        ov.Core().import_model(b"PK\x03\x04 this is a zip file, not a blob", "CPU")
    with pytest.raises(ModelReadError, match="wrong magic"):  # BlobError is a ModelReadError
        ov.Core().import_model(io.BytesIO(b"xx"), "CPU")


@pytest.mark.parametrize("keep", [10, 40, -1])
def test_truncated_blob_is_refused(compiled, keep):
    data = compiled.export_model().getvalue()
    with pytest.raises(BlobError, match="truncated"):
        ov.Core().import_model(data[:keep], "CPU")


def test_flipped_weight_byte_fails_the_checksum(compiled):
    data = bytearray(compiled.export_model().getvalue())
    data[-100] ^= 0x40
    with pytest.raises(BlobError, match="section 'bin' fails its checksum"):
        ov.Core().import_model(bytes(data), "CPU")


def test_blob_from_another_vinerun_version_is_refused(compiled):
    data = _rewrite_header(compiled.export_model().getvalue(), vinerun_version="0.0.1")
    expected = r"made by vinerun 0\.0\.1; this is vinerun " + re.escape(ov.__version__)
    with pytest.raises(BlobError, match=expected):
        ov.Core().import_model(data, "CPU")


def test_blob_of_another_format_version_is_refused(compiled):
    data = bytearray(compiled.export_model().getvalue())
    struct.pack_into("<H", data, 8, blobfmt.FORMAT_VERSION + 1)
    with pytest.raises(BlobError, match=f"format version {blobfmt.FORMAT_VERSION + 1}"):
        ov.Core().import_model(bytes(data), "CPU")


def test_blob_for_another_device_is_refused(compiled):
    data = _rewrite_header(compiled.export_model().getvalue(), device="GPU")
    with pytest.raises(BlobError, match="compiled for device GPU, not CPU"):
        ov.Core().import_model(data, "CPU")


def test_unknown_device_names_the_device(compiled):
    with pytest.raises(DeviceError, match="NOSUCH"):
        ov.Core().import_model(compiled.export_model(), "NOSUCH")


def test_header_records_device_version_options_and_model():
    core = ov.Core()
    data = core.compile_model(cnn_model(), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"}).export_model().getvalue()
    header, _ = blobfmt.read_header(data)
    assert header.device == "CPU" and header.vinerun_version == ov.__version__
    assert header.config["INFERENCE_PRECISION_HINT"] == "bf16"
    assert header.model_name == "cnn"
    assert [s["name"] for s in header.sections] == ["xml", "bin"]
    blob = blobfmt.read_blob(data, "CPU")
    assert bytes(blob.sections["xml"]).startswith(b'<?xml version="1.0"?>')


def _label_encoder_onnx() -> bytes:
    """An ai.onnx.ml LabelEncoder: its key/value tables are tensor attributes that OpenVINO IR cannot hold."""
    from onnx import TensorProto, helper

    node = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_int64s=[1, 2],
                            values_int64s=[10, 20], default_int64=-1)
    graph = helper.make_graph([node], "le", [helper.make_tensor_value_info("x", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 2)])
    return model.SerializeToString()


def test_op_that_ir_cannot_hold_is_refused_on_export_not_silently_dropped():
    compiled = ov.Core().compile_model(_label_encoder_onnx(), "CPU")
    np.testing.assert_array_equal(compiled(np.array([1, 2, 3]))[0], [10, 20, -1])
    with pytest.raises(UnsupportedOpError, match="LabelEncoder 'y': its tensor attribute 'keys' cannot be written"):
        compiled.export_model()
