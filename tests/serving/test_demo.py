"""The bundled demo model is what vinerun's builder makes, and ``vinerun serve`` with no model flags serves it."""

from __future__ import annotations

import numpy as np
import requests

from tests.serving.serving_utils import ServeProcess, reference
from vinerun import models
from vinerun.serving.demo import DEMO_MODEL, build_demo_bytes


def test_shipped_demo_model_matches_the_builder():
    assert DEMO_MODEL.read_bytes() == build_demo_bytes(), "regenerate with: python -m vinerun.serving.demo"


def test_serve_without_model_arguments_serves_the_demo(tmp_path):
    proc = ServeProcess([], grpc=False, log_path=tmp_path / "serve.log").wait_ready()
    try:
        x = models.sample_inputs("cnn")["image"]
        body = {"inputs": [{"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": x.ravel().tolist()}]}
        r = requests.post(proc.url + "/v2/models/demo/infer", json=body, timeout=30)
        assert r.status_code == 200, r.text
        got = np.array(r.json()["outputs"][0]["data"], np.float32).reshape(1, 10)
        np.testing.assert_allclose(got, reference(DEMO_MODEL, {"image": x})[0], rtol=1e-5, atol=1e-5)
    finally:
        assert proc.stop() == 0  # SIGTERM is a clean shutdown
    banner = proc.log()
    assert f"listening on http://127.0.0.1:{proc.rest_port}" in banner
    assert "model 'demo' versions [1] on CPU" in banner


def test_grpc_only_server_starts_and_stops_cleanly(tmp_path):
    import subprocess
    import sys

    import grpc

    from tests.serving.serving_utils import ROOT, free_port

    port = free_port()
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([sys.executable, "-m", "vinerun.tools.cli", "serve", "--port", str(port),
                             "--grpc_bind_address", "127.0.0.1"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=60)
    finally:
        proc.terminate()
        code = proc.wait(timeout=30)
        log.close()
    text = (tmp_path / "serve.log").read_text()
    assert code == 0, text
    assert f"gRPC (inference.GRPCInferenceService, tensorflow.serving) listening on 127.0.0.1:{port}" in text
    assert "REST" not in text.split("listening")[0] and "vinerun serve: stopped" in text
