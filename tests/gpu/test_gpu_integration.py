"""The real GPU with the rest of vinerun: AUTO picks it (CPU helper until it is compiled), MULTI, HETERO, BATCH
and the Core's automatic batching (THROUGHPUT), the CLI tools and the server with ``--target_device GPU``.
The same behaviour on the stand-in: tests/unit/plugins_gpu/test_gpu_integration.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

import vinerun as ov
from tests.serving.serving_utils import ServeProcess, save_cnn
from tests.unit.plugins_gpu._models import F32, X, cpu_outputs, mlp, run_queue
from vinerun import models
from vinerun.models.cnn import cnn_onnx
from vinerun.tools.cli import main


def test_auto_puts_the_discrete_gpu_first_and_hands_over_from_cpu() -> None:
    core = ov.Core()
    assert core.get_property("GPU", "DEVICE_TYPE") == ov.properties.device.Type.DISCRETE
    model = mlp()
    compiled = core.compile_model(model, "AUTO", F32)
    assert compiled._impl.devices == ["GPU", "CPU"]
    assert compiled.get_property("EXECUTION_DEVICES") in (["(CPU)"], ["GPU"])
    compiled([X])
    assert compiled._impl.wait_for_target(120)
    assert compiled.get_property("EXECUTION_DEVICES") == ["GPU"]
    np.testing.assert_allclose(compiled([X])[0], cpu_outputs(model, X), rtol=1e-3, atol=1e-3)
    assert compiled.get_property("EXECUTED_REQUESTS_PER_DEVICE")["GPU"] >= 1


def test_multi_and_hetero() -> None:
    core = ov.Core()
    model = mlp()
    for device in ("MULTI:GPU,CPU", "HETERO:GPU,CPU"):
        compiled = core.compile_model(model, device, F32)
        inputs = [X * (i + 1) for i in range(4)]
        for x, got in zip(inputs, run_queue(compiled, inputs), strict=True):
            np.testing.assert_allclose(got, cpu_outputs(model, x), rtol=1e-3, atol=1e-3)


def test_batch_gpu_8_and_automatic_batching_match_unbatched() -> None:
    core = ov.Core()
    model = mlp()
    single = core.compile_model(model, "GPU", F32)
    optimal = core.get_property("GPU", "OPTIMAL_BATCH_SIZE", {"MODEL_PTR": model})
    assert optimal > 1  # a small model leaves an H100 idle at batch 1
    explicit = core.compile_model(model, "BATCH:GPU(8)", {**F32, "AUTO_BATCH_TIMEOUT": 10000})
    implicit = core.compile_model(model, "GPU", {**F32, "PERFORMANCE_HINT": "THROUGHPUT", "AUTO_BATCH_TIMEOUT": 10000})
    for compiled, size in ((explicit, 8), (implicit, optimal)):
        assert compiled.get_property("AUTO_BATCH_SIZE") == size
        inputs = [X * (i - size / 2) / size for i in range(size)]
        for x, got in zip(inputs, run_queue(compiled, inputs), strict=True):
            np.testing.assert_allclose(got, single([x])[0], rtol=1e-3, atol=1e-4)


def test_cli_devices_benchmark_compile_import(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["devices", "--json"]) == 0
    assert "dGPU" in json.loads(capsys.readouterr().out)["GPU"]["FULL_DEVICE_NAME"]
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn_onnx(image=16, width=8), str(path))
    assert main(["benchmark", "-m", str(path), "-d", "GPU", "-niter", "16"]) == 0
    blob = tmp_path / "cnn.blob"
    assert main(["compile", "-m", str(path), "-d", "GPU", "-o", str(blob)]) == 0
    core = ov.Core()
    x = np.random.default_rng(0).random((1, 3, 16, 16)).astype(np.float32)
    np.testing.assert_array_equal(core.import_model(blob.read_bytes(), "GPU")([x])[0],
                                  core.compile_model(str(path), "GPU")([x])[0])


def test_serve_target_device_gpu(tmp_path: Path) -> None:
    import requests

    save_cnn(tmp_path / "cnn" / "1")
    x = models.sample_inputs("cnn")["image"]
    want = ov.Core().compile_model(str(tmp_path / "cnn" / "1" / "model.onnx"), "CPU", F32)([x])[0]
    server = ServeProcess(["--model_path", str(tmp_path / "cnn"), "--model_name", "m", "--target_device", "GPU",
                           "--plugin_config", json.dumps(F32)], grpc=False, log_path=tmp_path / "serve.log")
    try:
        server.wait_ready(120)
        body = {"inputs": [{"name": "image", "shape": [1, 3, 32, 32], "datatype": "FP32", "data": x.ravel().tolist()}]}
        r = requests.post(server.url + "/v2/models/m/infer", json=body, timeout=60)
        assert r.status_code == 200, r.text
        np.testing.assert_allclose(np.array(r.json()["outputs"][0]["data"]).reshape(want.shape), want,
                                   rtol=1e-3, atol=1e-3)
        body["inputs"][0]["shape"] = [1, 3, 16, 64]
        assert requests.post(server.url + "/v2/models/m/infer", json=body, timeout=60).status_code == 400
    finally:
        server.stop()
