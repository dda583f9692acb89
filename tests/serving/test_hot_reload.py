"""Hot reload under load: a client loop keeps inferring while a new version folder is added and the old
one removed; no request fails and the served version changes. Also config.json reload."""

from __future__ import annotations

import json
import shutil
import threading
import time

import numpy as np
import pytest
import requests

from tests.serving.serving_utils import ServeProcess, reference, save_cnn
from vinerun import models

X = models.sample_inputs("cnn")["image"]
BODY = {"inputs": [{"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": X.ravel().tolist()}]}


@pytest.fixture
def reload_server(tmp_path):
    save_cnn(tmp_path / "cnn" / "1", seed=0)
    config = {"model_config_list": [{"config": {"name": "cnn", "base_path": "cnn",
                                                "model_version_policy": {"all": {}}}}],
              "monitoring": {"metrics": {"enable": True}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    proc = ServeProcess(["--config_path", str(tmp_path / "config.json"), "--file_system_poll_wait_seconds", "1"],
                        grpc=False, log_path=tmp_path / "serve.log")
    try:
        yield proc.wait_ready(), tmp_path
    finally:
        proc.stop()


def _wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_versions_swap_under_load_without_failures(reload_server):
    server, repo = reload_server
    want = {"1": reference(repo / "cnn" / "1" / "model.onnx", {"image": X})[0]}
    results: list[tuple[int, str, list]] = []
    stop = threading.Event()

    def client() -> None:
        with requests.Session() as session:
            while not stop.is_set():
                r = session.post(server.url + "/v2/models/cnn/infer", json=BODY, timeout=30)
                doc = r.json()
                results.append((r.status_code, doc.get("model_version", ""), doc.get("outputs") or doc))

    threads = [threading.Thread(target=client) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        assert _wait_for(lambda: len(results) >= 5)
        save_cnn(repo / "cnn" / "2", seed=1)  # a new version appears (written elsewhere, renamed in)
        want["2"] = reference(repo / "cnn" / "2" / "model.onnx", {"image": X})[0]
        assert _wait_for(lambda: any(v == "2" for _, v, _ in results[-3:])), server.log()
        shutil.rmtree(repo / "cnn" / "1")     # the old one goes away
        assert _wait_for(lambda: server.get("/v1/models/cnn/versions/1")[1].get("model_version_status", [{}])[0]
                         .get("state") == "END"), server.log()
        count = len(results)
        assert _wait_for(lambda: len(results) >= count + 5)
    finally:
        stop.set()
        for t in threads:
            t.join()
    failed = [r for r in results if r[0] != 200]
    assert not failed, failed[:3]
    served = [v for _, v, _ in results]
    assert served[0] == "1" and served[-1] == "2"
    first_two = served.index("2")
    assert all(v == "2" for v in served[first_two + 2:])  # at most the requests in flight still answer "1"
    for _, version, outputs in results:
        np.testing.assert_allclose(np.array(outputs[0]["data"], np.float32).reshape(1, 10), want[version],
                                   rtol=1e-5, atol=1e-5)
    assert server.get("/v2/models/cnn/versions/1/ready")[0] == 404


def test_config_json_reload(reload_server):
    server, repo = reload_server
    save_cnn(repo / "other" / "3", seed=2)
    config = json.loads((repo / "config.json").read_text())
    config["model_config_list"].append({"config": {"name": "other", "base_path": "other"}})
    (repo / "config.json").write_text(json.dumps(config))
    r = requests.post(server.url + "/v1/config/reload", timeout=60)
    assert r.status_code in (200, 201), r.text  # 200 if the poller got there first
    assert r.json()["other"]["model_version_status"][0] == {"version": "3", "state": "AVAILABLE",
                                                            "status": {"error_code": "OK", "error_message": "OK"}}
    assert server.get("/v2/models/other/ready")[0] == 200
    (repo / "config.json").write_text('{"model_config_list": [], "bogus": 1}')  # invalid: nothing changes
    r = requests.post(server.url + "/v1/config/reload", timeout=60)
    assert r.status_code == 500 and "Reloading config file failed" in r.json()["error"]
    assert server.get("/v2/models/other/ready")[0] == 200
    assert requests.post(server.url + "/v2/models/cnn/infer", json=BODY, timeout=30).status_code == 200
    metrics = requests.get(server.url + "/metrics", timeout=30)  # enabled by config.json's monitoring section
    assert metrics.status_code == 200 and 'ovms_requests_success{api="KServe"' in metrics.text
