"""Bad requests get a 4xx whose message names the problem, and the server serves the next request."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import requests

from vinerun import models

X = models.sample_inputs("cnn")["image"]


def _good(server) -> None:
    body = {"inputs": [{"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": X.ravel().tolist()}]}
    r = requests.post(server.url + "/v2/models/cnn/infer", json=body, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["outputs"][0]["shape"] == [1, 10]


def _input(**overrides):
    item = {"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": X.ravel().tolist()}
    item.update(overrides)
    return item


CASES = {
    "malformed JSON": ("/v2/models/cnn/infer", b'{"inputs": [', {}, 400, "malformed JSON"),
    "not an object": ("/v2/models/cnn/infer", b"[1, 2]", {}, 400, "JSON object"),
    "wrong datatype": ("/v2/models/cnn/infer", {"inputs": [_input(datatype="INT64", data=[1] * 3072)]}, {}, 400,
                       "Invalid input precision - Expected: FP32; Actual: INT64; input name: image"),
    "unknown datatype": ("/v2/models/cnn/infer", {"inputs": [_input(datatype="FP99")]}, {}, 400, "FP99"),
    "wrong shape": ("/v2/models/cnn/infer", {"inputs": [_input(shape=[1, 3, 16, 64])]}, {}, 400,
                    "Invalid input shape - Expected: (1,3,32,32); Actual: (1,3,16,64); input name: image"),
    "element count": ("/v2/models/cnn/infer", {"inputs": [_input(data=[1.0, 2.0])]}, {}, 400,
                      "Expected: 3072 elements; Actual: 2 elements; input name: image"),
    "missing input": ("/v2/models/cnn/infer", {"inputs": []}, {}, 400, "image"),
    "unexpected input": ("/v2/models/cnn/infer", {"inputs": [_input(), _input(name="extra")]}, {}, 400,
                         "Unexpected input - 'extra'"),
    "no inputs field": ("/v2/models/cnn/infer", {"id": "1"}, {}, 400, "'inputs'"),
    "string data": ("/v2/models/cnn/infer", {"inputs": [_input(data=["a"] * 3072)]}, {}, 400, "image"),
    "unknown output": ("/v2/models/cnn/infer", {"inputs": [_input()], "outputs": [{"name": "nope"}]}, {}, 400,
                       "nope"),
    "unknown model": ("/v2/models/nope/infer", {"inputs": [_input()]}, {}, 404,
                      "Model with requested name is not found"),
    "unknown version": ("/v2/models/cnn/versions/7/infer", {"inputs": [_input()]}, {}, 404,
                        "Model with requested version is not found"),
    "oversized body": ("/v2/models/cnn/infer", b"x" * (5 << 20), {}, 413, "limit"),
    "bad header length": ("/v2/models/cnn/infer", b"{}", {"Inference-Header-Content-Length": "99"}, 400,
                          "Inference-Header-Content-Length"),
    "tfs unknown model": ("/v1/models/nope:predict", {"instances": [[1]]}, {}, 404, "not found"),
    "tfs both formats": ("/v1/models/cnn:predict", {"instances": [1], "inputs": [1]}, {}, 400, "exactly one"),
    "tfs wrong shape": ("/v1/models/cnn:predict", {"instances": [[1.0, 2.0]]}, {}, 400, "Invalid input shape"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_request_is_4xx_naming_the_problem(server, case):
    path, body, headers, status, words = CASES[case]
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = requests.post(server.url + path, data=data, headers={"Content-Type": "application/json", **headers},
                      timeout=30)
    assert r.status_code == status, r.text
    assert words in r.json()["error"]
    _good(server)


def _binary_body(payload: bytes, declared: int) -> tuple[bytes, dict]:
    head = json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                   "parameters": {"binary_data_size": declared}}]}).encode()
    return head + payload, {"Inference-Header-Content-Length": str(len(head))}


@pytest.mark.parametrize("cut", [1, 4096])
def test_truncated_binary_payload(server, cut):
    raw = X.tobytes()
    body, headers = _binary_body(raw[:-cut], len(raw))
    r = requests.post(server.url + "/v2/models/cnn/infer", data=body, headers=headers, timeout=30)
    assert r.status_code == 400, r.text
    assert "binary payload truncated" in r.json()["error"] and "'image'" in r.json()["error"]
    _good(server)


def test_binary_size_not_matching_shape(server):
    raw = X.tobytes()[:-4]
    body, headers = _binary_body(raw, len(raw))
    r = requests.post(server.url + "/v2/models/cnn/infer", data=body, headers=headers, timeout=30)
    assert r.status_code == 400
    assert r.json()["error"] == ("Invalid content size of tensor proto - Expected: 12288 bytes; Actual: 12284 bytes; "
                                 "input name: image")
    _good(server)


def test_truncated_bytes_element(server):
    raw = struct.pack("<I", 5) + b"hello" + struct.pack("<I", 50) + b"short"
    head = json.dumps({"inputs": [{"name": "text", "shape": [2], "datatype": "BYTES",
                                   "parameters": {"binary_data_size": len(raw)}}]}).encode()
    r = requests.post(server.url + "/v2/models/echo/infer", data=head + raw,
                      headers={"Inference-Header-Content-Length": str(len(head))}, timeout=30)
    assert r.status_code == 400 and "runs past the payload" in r.json()["error"]
    _good(server)


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/v2/models/nope", 404), ("GET", "/v2/models/cnn/versions/9", 404), ("GET", "/v2/models/nope/ready", 404),
    ("GET", "/no/such/route", 404), ("DELETE", "/v2/models/cnn", 405), ("GET", "/v2/models/cnn/infer", 405),
    ("GET", "/v1/models/nope", 404), ("GET", "/v1/models/cnn/versions/9/metadata", 404),
])
def test_unknown_routes_models_versions(server, method, path, status):
    r = requests.request(method, server.url + path, timeout=30)
    assert r.status_code == status, r.text
    assert r.json()["error"]
    _good(server)


def test_failures_are_counted(server):
    body = {"inputs": [_input(shape=[1, 3, 16, 64])]}
    assert requests.post(server.url + "/v2/models/cnn/infer", json=body, timeout=30).status_code == 400
    text = requests.get(server.url + "/metrics", timeout=30).text
    line = [x for x in text.splitlines() if x.startswith('ovms_requests_fail{api="KServe",interface="REST",'
                                                          'method="ModelInfer",name="cnn"')]
    assert line and float(line[0].split()[-1]) >= 1
    assert np.isfinite(float(line[0].split()[-1]))
