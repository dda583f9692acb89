"""The gRPC server over an in-process DataPlane: every RPC, and bad requests that must not hurt it."""

import json
import socket

import grpc
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import vinerun as ov
from vinerun.errors import VinerunError
from vinerun.serving.config import ServerConfig
from vinerun.serving.dataplane import DataPlane
from vinerun.serving.grpc import start_grpc_server
from vinerun.serving.grpc.bytes_codec import encode_bytes
from vinerun.serving.grpc.protos import grpc_predict_v2_pb2 as pb
from vinerun.serving.grpc.protos import tfs_apis_pb2 as tfs
from vinerun.serving.grpc.tfs_codec import numpy_to_tensor, tensor_to_numpy
from vinerun.serving.model_manager import ModelManager

KSERVE = "inference.GRPCInferenceService"
X = np.array([[-3.0, 0.5, 1.0, 2.0]], np.float32)


def write_repository(root):
    """models/num (x[1,4] FP32 -> y = relu(2x+1), z = sum(x)) and models/str (BYTES s[2] -> o), config.json."""
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 4])
    nodes = [h.make_node("Mul", ["x", "two"], ["m"]), h.make_node("Add", ["m", "one"], ["a"]),
             h.make_node("Relu", ["a"], ["y"]), h.make_node("ReduceSum", ["x", "axes"], ["z"], keepdims=1)]
    init = [h.make_tensor("two", T.FLOAT, [], [2.0]), h.make_tensor("one", T.FLOAT, [], [1.0]),
            h.make_tensor("axes", T.INT64, [1], [1])]
    outs = [h.make_tensor_value_info("y", T.FLOAT, [1, 4]), h.make_tensor_value_info("z", T.FLOAT, [1, 1])]
    num = h.make_model(h.make_graph(nodes, "num", [x], outs, init), opset_imports=[h.make_opsetid("", 13)])
    s = h.make_tensor_value_info("s", T.STRING, [2])
    o = h.make_tensor_value_info("o", T.STRING, [2])
    text = h.make_model(h.make_graph([h.make_node("Identity", ["s"], ["o"])], "str", [s], [o]),
                        opset_imports=[h.make_opsetid("", 13)])
    for name, model in (("num", num), ("str", text)):
        (root / name / "1").mkdir(parents=True)
        onnx.save(model, str(root / name / "1" / "model.onnx"))
    config = {"model_config_list": [{"config": {"name": n, "base_path": n}} for n in ("num", "str")]}
    (root / "config.json").write_text(json.dumps(config))
    return root / "config.json"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return write_repository(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def server(repo):
    cfg = ServerConfig.from_args(["--config_path", str(repo), "--port", "1", "--file_system_poll_wait_seconds", "0"])
    manager = ModelManager(ov.Core(), cfg)
    manager.start()
    plane = DataPlane(manager)
    plane.started = True
    srv = start_grpc_server(plane, "127.0.0.1", 0, workers=1)
    srv.plane = plane  # for the metrics test
    yield srv
    srv.stop(None)
    manager.stop()


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        yield ch


def call(channel, service, method, request, response_cls):
    rpc = channel.unary_unary(f"/{service}/{method}", request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=response_cls.FromString)
    return rpc(request, timeout=60)


def infer(channel, request):
    return call(channel, KSERVE, "ModelInfer", request, pb.ModelInferResponse)


def outputs(resp):
    return {o.name: np.frombuffer(raw, np.float32).reshape(o.shape)
            for o, raw in zip(resp.outputs, resp.raw_output_contents, strict=True)}


@pytest.fixture(scope="module")
def expected(repo):
    compiled = ov.Core().compile_model(str(repo.parent / "num" / "1" / "model.onnx"), "CPU")
    result = compiled({"x": X})
    return {port.get_any_name(): value for port, value in result.items()}


def good_request(version=""):
    msg = pb.ModelInferRequest(model_name="num", model_version=version, id="req-1")
    msg.inputs.add(name="x", datatype="FP32", shape=[1, 4]).contents.fp32_contents.extend(X.ravel().tolist())
    return msg


def test_health_and_server_metadata(channel):
    assert call(channel, KSERVE, "ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse).live
    assert call(channel, KSERVE, "ServerReady", pb.ServerReadyRequest(), pb.ServerReadyResponse).ready
    meta = call(channel, KSERVE, "ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse)
    assert meta.name and meta.version == ov.__version__


def test_model_ready_and_metadata(channel):
    assert call(channel, KSERVE, "ModelReady", pb.ModelReadyRequest(name="num"), pb.ModelReadyResponse).ready
    meta = call(channel, KSERVE, "ModelMetadata", pb.ModelMetadataRequest(name="num", version="1"),
                pb.ModelMetadataResponse)
    assert (meta.name, list(meta.versions), meta.platform) == ("num", ["1"], "OpenVINO")
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.inputs] == [("x", "FP32", [1, 4])]
    assert [t.name for t in meta.outputs] == ["y", "z"]


def test_infer_typed_and_raw_inputs_equal_in_process_inference(channel, expected):
    resp = infer(channel, good_request())
    assert (resp.model_name, resp.model_version, resp.id) == ("num", "1", "req-1")
    got = outputs(resp)
    for name in ("y", "z"):
        np.testing.assert_array_equal(got[name], expected[name])
    raw = pb.ModelInferRequest(model_name="num", model_version="1")
    raw.inputs.add(name="x", datatype="FP32", shape=[1, 4])
    raw.raw_input_contents.append(X.tobytes())
    raw.outputs.add(name="z")
    got = outputs(infer(channel, raw))
    assert list(got) == ["z"]
    np.testing.assert_array_equal(got["z"], expected["z"])


def test_bytes_tensors_raw_and_typed(channel):
    words = np.array([b"hello", "w\u00f6rld".encode()], dtype=object)
    raw = pb.ModelInferRequest(model_name="str")
    raw.inputs.add(name="s", datatype="BYTES", shape=[2])
    raw.raw_input_contents.append(encode_bytes(words))
    resp = infer(channel, raw)
    assert resp.outputs[0].datatype == "BYTES" and resp.raw_output_contents[0] == encode_bytes(words)
    typed = pb.ModelInferRequest(model_name="str")
    typed.inputs.add(name="s", datatype="BYTES", shape=[2]).contents.bytes_contents.extend(words.tolist())
    assert infer(channel, typed).raw_output_contents[0] == encode_bytes(words)


def _wrong_shape():
    msg = good_request()
    msg.inputs[0].shape[:] = [2, 2]
    return msg


def _wrong_datatype():
    msg = pb.ModelInferRequest(model_name="num")
    msg.inputs.add(name="x", datatype="INT32", shape=[1, 4]).contents.int_contents.extend([1, 2, 3, 4])
    return msg


def _size_mismatch():
    msg = pb.ModelInferRequest(model_name="num")
    msg.inputs.add(name="x", datatype="FP32", shape=[1, 4])
    msg.raw_input_contents.append(X.tobytes()[:12])
    return msg


def _renamed(**changes):
    msg = good_request()
    for key, value in changes.items():
        setattr(msg, key, value)
    return msg


def _unknown_output():
    msg = good_request()
    msg.outputs.add(name="nope")
    return msg


@pytest.mark.parametrize("request_,code,text", [
    (_wrong_shape(), grpc.StatusCode.INVALID_ARGUMENT, "Invalid input shape - Expected: (1,4); Actual: (2,2)"),
    (_wrong_datatype(), grpc.StatusCode.INVALID_ARGUMENT, "Invalid input precision - Expected: FP32; Actual: INT32"),
    (pb.ModelInferRequest(model_name="num"), grpc.StatusCode.INVALID_ARGUMENT, "missing input name: x"),
    (_size_mismatch(), grpc.StatusCode.INVALID_ARGUMENT, "Expected: 16 bytes; Actual: 12 bytes; input name: x"),
    (_renamed(model_name="nope"), grpc.StatusCode.NOT_FOUND, "Model with requested name is not found"),
    (_renamed(model_version="7"), grpc.StatusCode.NOT_FOUND, "Model with requested version is not found"),
    (_unknown_output(), grpc.StatusCode.INVALID_ARGUMENT, "nope"),
], ids=["shape", "datatype", "missing", "raw-size", "model", "version", "output"])
def test_bad_infer_requests_get_a_status_naming_the_problem(channel, expected, request_, code, text):
    with pytest.raises(grpc.RpcError) as info:
        infer(channel, request_)
    assert info.value.code() == code, info.value.details()
    assert text in info.value.details()
    np.testing.assert_array_equal(outputs(infer(channel, good_request()))["y"], expected["y"])


def test_malformed_message_bytes_are_invalid_argument(channel):
    rpc = channel.unary_unary(f"/{KSERVE}/ModelInfer")  # raw bytes in and out
    with pytest.raises(grpc.RpcError) as info:
        rpc(b"\x0a\xff\xff\xff", timeout=60)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed inference.ModelInferRequest" in info.value.details()
    assert infer(channel, good_request()).outputs


def test_unknown_model_ready_and_metadata_are_not_found(channel):
    for method, req, cls in (("ModelReady", pb.ModelReadyRequest(name="nope"), pb.ModelReadyResponse),
                             ("ModelMetadata", pb.ModelMetadataRequest(name="num", version="9"),
                              pb.ModelMetadataResponse)):
        with pytest.raises(grpc.RpcError) as info:
            call(channel, KSERVE, method, req, cls)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_stream_infer_reports_errors_in_stream_and_goes_on(channel, expected):
    rpc = channel.stream_stream(f"/{KSERVE}/ModelStreamInfer", request_serializer=lambda m: m.SerializeToString(),
                                response_deserializer=pb.ModelStreamInferResponse.FromString)
    answers = list(rpc(iter([good_request(), _wrong_shape(), good_request("1")]), timeout=60))
    assert [bool(a.error_message) for a in answers] == [False, True, False]
    assert "Invalid input shape" in answers[1].error_message
    np.testing.assert_array_equal(outputs(answers[2].infer_response)["y"], expected["y"])


def _spec(msg, name="num", version=None):
    msg.model_spec.name = name
    if version is not None:
        msg.model_spec.version.value = version
    return msg


def test_tfs_status_metadata_and_predict(channel, expected):
    status = call(channel, "tensorflow.serving.ModelService", "GetModelStatus", _spec(tfs.GetModelStatusRequest()),
                  tfs.GetModelStatusResponse)
    assert [(s.version, s.state) for s in status.model_version_status] == [(1, 30)]
    meta_req = _spec(tfs.GetModelMetadataRequest(), version=0)
    meta_req.metadata_field.append("signature_def")
    meta = call(channel, "tensorflow.serving.PredictionService", "GetModelMetadata", meta_req,
                tfs.GetModelMetadataResponse)
    sig = tfs.SignatureDefMap.FromString(meta.metadata["signature_def"].value).signature_def["serving_default"]
    assert meta.model_spec.version.value == 1 and sorted(sig.outputs) == ["y", "z"]
    pred = _spec(tfs.PredictRequest(), version=1)
    pred.inputs["x"].CopyFrom(numpy_to_tensor(X))
    resp = call(channel, "tensorflow.serving.PredictionService", "Predict", pred, tfs.PredictResponse)
    np.testing.assert_array_equal(tensor_to_numpy(resp.outputs["y"], "y"), expected["y"])
    assert resp.model_spec.version.value == 1


def test_tfs_bad_requests(channel):
    bad = _spec(tfs.PredictRequest())
    bad.inputs["x"].CopyFrom(numpy_to_tensor(X))
    bad.inputs["x"].tensor_content = bad.inputs["x"].tensor_content[:-4]
    label = _spec(tfs.GetModelStatusRequest())
    label.model_spec.version_label = "stable"
    cases = [("PredictionService", "Predict", bad, tfs.PredictResponse, grpc.StatusCode.INVALID_ARGUMENT,
              "Invalid content size of tensor proto - Expected: 16 bytes; Actual: 12 bytes; input name: x"),
             ("ModelService", "GetModelStatus", _spec(tfs.GetModelStatusRequest(), "nope"),
              tfs.GetModelStatusResponse, grpc.StatusCode.NOT_FOUND, "Model with requested name is not found"),
             ("ModelService", "GetModelStatus", label, tfs.GetModelStatusResponse, grpc.StatusCode.UNIMPLEMENTED,
              "version_label")]
    for service, method, req, cls, code, text in cases:
        with pytest.raises(grpc.RpcError) as info:
            call(channel, f"tensorflow.serving.{service}", method, req, cls)
        assert info.value.code() == code and text in info.value.details(), info.value.details()


def test_binding_a_busy_port_names_the_address(server):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(VinerunError, match=f"127.0.0.1:{taken.getsockname()[1]}"):
            start_grpc_server(None, "127.0.0.1", taken.getsockname()[1], workers=1)


def test_grpc_calls_are_counted_with_interface_grpc(server, channel):
    infer(channel, good_request())
    with pytest.raises(grpc.RpcError):
        infer(channel, _wrong_shape())
    call(channel, "tensorflow.serving.ModelService", "GetModelStatus", _spec(tfs.GetModelStatusRequest()),
         tfs.GetModelStatusResponse)
    text = server.plane.metrics.render().decode()
    for api, method in (("KServe", "ModelInfer"), ("TensorFlowServing", "GetModelStatus")):
        assert f'ovms_requests_success{{api="{api}",interface="gRPC",method="{method}",name="num"' in text, text
    assert 'ovms_requests_fail{api="KServe",interface="gRPC",method="ModelInfer",name="num"' in text


def test_concurrent_requests_all_get_their_own_answers(channel):
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(24)]

    def one(x):
        msg = pb.ModelInferRequest(model_name="num")
        msg.inputs.add(name="x", datatype="FP32", shape=[1, 4])
        msg.raw_input_contents.append(x.tobytes())
        return outputs(infer(channel, msg))["y"]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, inputs))
    for x, y in zip(inputs, results, strict=True):
        np.testing.assert_allclose(y, np.maximum(2 * x + 1, 0), rtol=1e-6)
