"""Unmodified REST clients (tritonclient, kserve SDK, ovmsclient) against a running ``vinerun serve``:
health, metadata, inference with JSON and binary tensors; outputs equal in-process vinerun inference."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.serving.serving_utils import reference
from vinerun import models

X = models.sample_inputs("cnn")["image"]


@pytest.fixture(scope="module")
def expected(repository):
    return {v: reference(repository / "cnn" / v / "model.onnx", {"image": X})[0] for v in ("1", "2")}


def test_tritonclient_http_session(server, expected):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.url.removeprefix("http://"))
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("cnn") and client.is_model_ready("cnn", "1")
    meta = client.get_model_metadata("cnn")
    assert meta["platform"] == "OpenVINO" and meta["versions"] == ["1", "2"]
    assert meta["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [1, 3, 32, 32]}]
    assert client.get_server_metadata()["name"] == "vinerun"
    for binary in (True, False):  # binary request + binary outputs, then pure JSON both ways
        x = httpclient.InferInput("image", [1, 3, 32, 32], "FP32")
        x.set_data_from_numpy(X, binary_data=binary)
        out = httpclient.InferRequestedOutput("logits", binary_data=binary)
        result = client.infer("cnn", [x], outputs=[out])
        np.testing.assert_allclose(result.as_numpy("logits"), expected["2"], rtol=1e-5, atol=1e-5)
        assert result.get_response()["model_version"] == "2"
    result = client.infer("cnn", [x], model_version="1")  # no outputs listed: binary_data_output
    np.testing.assert_allclose(result.as_numpy("logits"), expected["1"], rtol=1e-5, atol=1e-5)


def test_tritonclient_http_bytes(server):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.url.removeprefix("http://"))
    text = np.array([b"hello", "wörld".encode()], dtype=object)
    for binary in (True, False):
        x = httpclient.InferInput("text", [2], "BYTES")
        x.set_data_from_numpy(text, binary_data=binary)
        result = client.infer("echo", [x], outputs=[httpclient.InferRequestedOutput("echo", binary_data=binary)])
        assert [bytes(b) if not isinstance(b, str) else b.encode() for b in result.as_numpy("echo")] == list(text)


def test_tritonclient_ir_model(server, repository):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.url.removeprefix("http://"))
    x = httpclient.InferInput("image", [1, 3, 32, 32], "FP32")
    x.set_data_from_numpy(X)
    got = client.infer("cnn_ir", [x]).as_numpy("logits")
    want = reference(repository / "cnn_ir" / "1" / "model.xml", {"image": X})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


_KSERVE_SESSION = """
import asyncio, json, sys
import numpy as np
from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig

url = sys.argv[1]
x = np.load(sys.argv[2])


async def session():
    client = InferenceRESTClient(RESTConfig(protocol="v2"))
    try:
        out = {"live": await client.is_server_live(url), "ready": await client.is_server_ready(url),
               "model_ready": await client.is_model_ready(url, "cnn")}
        for binary in (False, True):
            i = InferInput("image", [1, 3, 32, 32], "FP32")
            i.set_data_from_numpy(x, binary_data=binary)
            r = await client.infer(url, InferRequest(model_name="cnn", infer_inputs=[i]), model_name="cnn")
            out[f"binary={binary}"] = [r.outputs[0].name, r.outputs[0].as_numpy().ravel().tolist()]
        return out
    finally:
        await client.close()

print(json.dumps(asyncio.run(session())))
"""


def test_kserve_sdk_rest_client(server, expected, tmp_path):
    # in its own interpreter: kserve registers the same inference.* protobuf symbols as tritonclient.grpc and
    # vinerun's gRPC stubs, so it cannot share a process with them (kserve issue #3099)
    np.save(tmp_path / "x.npy", X)
    proc = subprocess.run([sys.executable, "-c", _KSERVE_SESSION, server.url, str(tmp_path / "x.npy")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["live"] is True and out["ready"] is True and out["model_ready"] is True
    for key in ("binary=False", "binary=True"):
        name, data = out[key]
        assert name == "logits"
        np.testing.assert_allclose(np.array(data, np.float32).reshape(1, 10), expected["2"], rtol=1e-5, atol=1e-5)


def test_ovmsclient_http(server, expected):
    import ovmsclient

    client = ovmsclient.make_http_client(server.url.removeprefix("http://"))
    status = client.get_model_status("cnn")
    assert status[1]["state"] == "AVAILABLE" and status[2]["state"] == "AVAILABLE"
    assert status[2]["error_code"] == 0
    meta = client.get_model_metadata("cnn")
    assert meta["model_version"] == 2
    assert meta["inputs"]["image"] == {"dtype": "DT_FLOAT", "shape": [1, 3, 32, 32]}
    assert meta["outputs"]["logits"] == {"dtype": "DT_FLOAT", "shape": [1, 10]}
    got = client.predict({"image": X}, "cnn")
    np.testing.assert_allclose(got, expected["2"], rtol=1e-5, atol=1e-5)
    got = client.predict({"image": X}, "cnn", model_version=1)
    np.testing.assert_allclose(got, expected["1"], rtol=1e-5, atol=1e-5)
    assert client.get_model_metadata("cnn", model_version=1)["model_version"] == 1


def test_tfs_rest_row_format_and_b64(server, expected):
    import requests

    r = requests.post(server.url + "/v1/models/cnn:predict", json={"instances": X.tolist()}, timeout=30)
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(np.array(r.json()["predictions"], np.float32), expected["2"], rtol=1e-5, atol=1e-5)
    r = requests.post(server.url + "/v1/models/echo/versions/1:predict", timeout=30,
                      json={"instances": [{"b64": "aGVsbG8="}, {"b64": "d29ybGQ="}]})
    assert r.status_code == 200, r.text
    assert r.json() == {"predictions": ["hello", "world"]}


def test_metrics_and_config_endpoints(server):
    import requests

    # a KServe REST inference of its own: under xdist the tests that make one may run in another process
    body = {"inputs": [{"name": "image", "shape": list(X.shape), "datatype": "FP32", "data": X.ravel().tolist()}]}
    assert requests.post(server.url + "/v2/models/cnn/infer", json=body, timeout=30).status_code == 200
    text = requests.get(server.url + "/metrics", timeout=30).text
    assert "# TYPE ovms_requests_success counter" in text
    assert 'ovms_requests_success{api="KServe",interface="REST",method="ModelInfer",name="cnn",version="2"}' in text
    assert 'ovms_request_time_us_bucket{interface="REST",le="10",name="cnn",version="2"}' in text
    assert 'le="1808"' not in text and 'le="58"' in text  # floor(10 * 1.8^3) = 58
    assert 'ovms_streams{name="cnn",version="1"}' in text
    status = requests.get(server.url + "/v1/config", timeout=30).json()
    assert status["cnn"]["model_version_status"][0]["state"] == "AVAILABLE"
    assert set(status) == {"cnn", "cnn_ir", "echo"}
    r = requests.post(server.url + "/v1/config/reload", timeout=60)
    assert r.status_code == 200, r.text  # nothing changed
