"""Message <-> tensor translation of the gRPC transport, without a server."""

import numpy as np
import pytest

from vinerun.serving.errors import (
    BadRequest,
    InvalidContentSize,
    InvalidInput,
    InvalidPrecision,
    InvalidShape,
    NotSupported,
)
from vinerun.serving.grpc.bytes_codec import decode_bytes, encode_bytes
from vinerun.serving.grpc.kserve_codec import decode_infer_request, encode_infer_response
from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb
from vinerun.serving.grpc.protos import tf_framework_pb2 as tf
from vinerun.serving.grpc.protos import tfs_apis_pb2 as tfs
from vinerun.serving.grpc.tfs_codec import (
    decode_predict,
    encode_metadata,
    encode_predict,
    encode_status,
    numpy_to_tensor,
    tensor_to_numpy,
)
from vinerun.serving.tensors import InferResponse, ModelMetadata, TensorSpec, VersionStatus


def _request(datatype="FP32", shape=(1, 2), **contents):
    msg = pb.ModelInferRequest(model_name="m", model_version="2", id="r1")
    t = msg.inputs.add(name="x", datatype=datatype, shape=list(shape))
    for field, values in contents.items():
        getattr(t.contents, field).extend(values)
    return msg


def test_bytes_round_trip_and_truncation_names_the_input():
    arr = np.array([b"a", b"", "\u00e9".encode()], dtype=object)
    assert decode_bytes(encode_bytes(arr), 3, "s").tolist() == arr.tolist()
    with pytest.raises(InvalidContentSize, match="input name: s"):
        decode_bytes(encode_bytes(arr)[:-1], 3, "s")
    with pytest.raises(InvalidContentSize, match="left after"):
        decode_bytes(encode_bytes(arr) + b"x", 3, "s")
    with pytest.raises(InvalidContentSize, match="Expected: 1000000"):
        decode_bytes(b"\x00" * 8, 1_000_000, "s")


def test_typed_contents_decode_with_request_fields():
    msg = _request(fp32_contents=[1.5, -2])
    msg.outputs.add(name="y")
    msg.parameters["priority"].int64_param = 3
    req = decode_infer_request(msg)
    assert (req.model_name, req.model_version, req.id, req.interface) == ("m", "2", "r1", "gRPC")
    np.testing.assert_array_equal(req.inputs["x"], np.array([[1.5, -2]], np.float32))
    assert req.outputs == ["y"] and req.parameters == {"priority": 3}


@pytest.mark.parametrize("datatype,field,values,dtype", [
    ("INT8", "int_contents", [-3, 4], np.int8), ("UINT16", "uint_contents", [1, 65535], np.uint16),
    ("INT64", "int64_contents", [2**40, -1], np.int64), ("BOOL", "bool_contents", [True, False], np.bool_),
    ("FP64", "fp64_contents", [0.25, 1e300], np.float64), ("UINT64", "uint64_contents", [2**63 + 1, 1], np.uint64),
])
def test_every_typed_contents_field(datatype, field, values, dtype):
    got = decode_infer_request(_request(datatype, (2,), **{field: values})).inputs["x"]
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.array(values, dtype))


def test_raw_contents_with_bytes_and_numbers():
    msg = pb.ModelInferRequest(model_name="m")
    msg.inputs.add(name="x", datatype="FP16", shape=[2])
    msg.inputs.add(name="s", datatype="BYTES", shape=[1, 2])
    msg.raw_input_contents.extend([np.array([1, 2], "<f2").tobytes(), encode_bytes(np.array([b"ab", b"c"]))])
    req = decode_infer_request(msg)
    np.testing.assert_array_equal(req.inputs["x"], np.array([1, 2], np.float16))
    assert req.inputs["s"].shape == (1, 2) and req.inputs["s"].tolist() == [[b"ab", b"c"]]


@pytest.mark.parametrize("msg,error,text", [
    (_request(fp32_contents=[1.0]), InvalidContentSize, "Expected: 2 values in fp32_contents; Actual: 1"),
    (_request(shape=(-1, 2), fp32_contents=[1.0, 2.0]), InvalidShape, "negative dimension"),
    (_request("FP99", fp32_contents=[1.0, 2.0]), InvalidPrecision, "unknown datatype 'FP99'; input name: x"),
    (_request("INT8", (1,), int_contents=[300]), InvalidInput, "does not fit INT8"),
    (_request("FP16", (1,), fp32_contents=[1.0]), InvalidInput, "raw_input_contents; input name: x"),
])
def test_bad_typed_tensors_name_the_problem(msg, error, text):
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        decode_infer_request(msg)


def test_bad_raw_tensors_name_the_problem():
    msg = _request()
    msg.raw_input_contents.append(b"\x00" * 7)
    with pytest.raises(InvalidContentSize, match="Expected: 8 bytes; Actual: 7 bytes; input name: x"):
        decode_infer_request(msg)
    msg.raw_input_contents.append(b"")
    with pytest.raises(BadRequest, match="2 entries for 1 inputs"):
        decode_infer_request(msg)
    twice = _request(fp32_contents=[1, 2])
    twice.inputs.add().CopyFrom(twice.inputs[0])
    with pytest.raises(BadRequest, match="appears twice"):
        decode_infer_request(twice)


def test_response_goes_back_raw():
    resp = InferResponse("m", "3", "r1", {"y": np.array([[1, 2]], np.int32), "s": np.array([b"xy"], object)})
    msg = encode_infer_response(resp)
    assert (msg.model_name, msg.model_version, msg.id) == ("m", "3", "r1")
    assert [(o.name, o.datatype, list(o.shape)) for o in msg.outputs] == [("y", "INT32", [1, 2]), ("s", "BYTES", [1])]
    assert msg.raw_output_contents[0] == np.array([1, 2], "<i4").tobytes()
    assert msg.raw_output_contents[1] == b"\x02\x00\x00\x00xy"


@pytest.mark.parametrize("array", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int8), np.array([True]),
    np.array([[b"ab", b""]], dtype=object), np.array(2.5, np.float16),
])
def test_tensor_proto_round_trip(array):
    got = tensor_to_numpy(numpy_to_tensor(array), "x")
    assert got.dtype == array.dtype and got.shape == array.shape
    assert got.tolist() == array.tolist()


def test_tensor_proto_typed_vals_and_errors():
    t = tf.TensorProto(dtype=tf.DT_HALF, half_val=[int(np.float16(1.5).view(np.uint16))])
    t.tensor_shape.dim.add(size=1)
    np.testing.assert_array_equal(tensor_to_numpy(t, "h"), np.array([1.5], np.float16))
    t = tf.TensorProto(dtype=tf.DT_INT32, int_val=[1, 2, 3])
    t.tensor_shape.dim.add(size=2)
    with pytest.raises(InvalidContentSize, match="Expected: 2 values in int_val; Actual: 3; input name: i"):
        tensor_to_numpy(t, "i")
    t = numpy_to_tensor(np.zeros(4, np.float32))
    t.tensor_content = t.tensor_content[:-2]
    with pytest.raises(InvalidContentSize, match="Expected: 16 bytes; Actual: 14 bytes; input name: f"):
        tensor_to_numpy(t, "f")
    with pytest.raises(InvalidPrecision, match="DT_COMPLEX64"):
        tensor_to_numpy(tf.TensorProto(dtype=tf.DT_COMPLEX64), "c")


def test_predict_request_response_and_version_label():
    msg = tfs.PredictRequest()
    msg.model_spec.name = "m"
    msg.model_spec.version.value = 0
    msg.inputs["x"].CopyFrom(numpy_to_tensor(np.ones((1, 2), np.float32)))
    msg.output_filter.append("y")
    req = decode_predict(msg)
    assert (req.model_name, req.model_version, req.outputs, req.api) == ("m", "0", ["y"], "TensorFlowServing")
    msg.model_spec.version_label = "stable"
    with pytest.raises(NotSupported, match="version_label"):
        decode_predict(msg)
    out = encode_predict(InferResponse("m", "4", None, {"y": np.zeros(2, np.float32)}))
    assert out.model_spec.version.value == 4 and out.outputs["y"].dtype == tf.DT_FLOAT


def test_metadata_and_status_messages():
    meta = ModelMetadata("m", ["1", "3"], "OpenVINO", [TensorSpec("x", "FP32", [-1, 4])],
                         [TensorSpec("s", "BYTES", [2])])
    msg = encode_metadata(meta, None)
    assert msg.model_spec.version.value == 3
    sigmap = tfs.SignatureDefMap.FromString(msg.metadata["signature_def"].value)
    sig = sigmap.signature_def["serving_default"]
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 4] and sig.inputs["x"].dtype == tf.DT_FLOAT
    assert sig.outputs["s"].dtype == tf.DT_STRING
    status = encode_status([VersionStatus(1, "AVAILABLE"), VersionStatus(2, "LOADING", 9, "busy")])
    assert [(s.version, s.state, s.status.error_code) for s in status.model_version_status] == [(1, 30, 0), (2, 20, 9)]


def test_huge_declared_shapes_fail_before_allocating():
    raw = _request(shape=(1 << 40,))
    raw.raw_input_contents.append(b"\x00" * 16)
    with pytest.raises(InvalidContentSize, match=f"Expected: {4 << 40} bytes; Actual: 16 bytes"):
        decode_infer_request(raw)
    with pytest.raises(InvalidContentSize, match=f"Expected: {1 << 40} values"):
        decode_infer_request(_request(shape=(1 << 40,), fp32_contents=[1.0]))
    t = tf.TensorProto(dtype=tf.DT_STRING, string_val=[b"a"])
    t.tensor_shape.dim.add(size=1 << 40)
    with pytest.raises(InvalidContentSize, match="string_val"):
        tensor_to_numpy(t, "s")
