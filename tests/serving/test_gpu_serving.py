"""``vinerun serve`` with ``target_device`` GPU (the stand-in, in a test-only launcher): config.json and the
command-line flags, real clients, bad inputs still 4xx; without a GPU the model fails to load naming the devices."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import requests

import vinerun as ov
from tests.serving.serving_utils import ServeProcess, save_cnn
from vinerun import models
from vinerun.plugins.gpu import backend

X = models.sample_inputs("cnn")["image"]
STAND_IN = "tests.serving.gpu_stand_in_cli"
F32 = {"INFERENCE_PRECISION_HINT": "f32"}


@pytest.fixture(scope="module")
def cnn_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gpu_repo")
    save_cnn(root / "cnn" / "1", seed=0)
    return root / "cnn"


@pytest.fixture(scope="module")
def expected(cnn_dir: Path) -> np.ndarray:
    """In-process CPU inference in f32 (CPU's default here may be bf16)."""
    return ov.Core().compile_model(str(cnn_dir / "1" / "model.onnx"), "CPU", F32)({"image": X})[0]


@contextlib.contextmanager
def _serve(args: list[str], log: Path, cli: str = STAND_IN, probe: str = "/v2/health/ready") -> Iterator[ServeProcess]:
    proc = ServeProcess([*args, "--file_system_poll_wait_seconds", "0"], grpc=False, log_path=log, cli=cli)
    try:
        yield proc.wait_ready(probe=probe)
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def config_server(cnn_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """``cnn`` on GPU at its default precision (f16) and ``cnn_f32`` on GPU in f32, from config.json."""
    root = tmp_path_factory.mktemp("gpu_config")
    config = {"model_config_list": [
        {"config": {"name": "cnn", "base_path": str(cnn_dir), "target_device": "GPU"}},
        {"config": {"name": "cnn_f32", "base_path": str(cnn_dir), "target_device": "GPU", "plugin_config": F32}},
    ]}
    (root / "config.json").write_text(json.dumps(config))
    with _serve(["--config_path", str(root / "config.json")], root / "serve.log") as server:
        yield server


def _infer(server: ServeProcess, model: str) -> np.ndarray:
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.url.removeprefix("http://"))
    assert client.is_model_ready(model)
    x = httpclient.InferInput("image", [1, 3, 32, 32], "FP32")
    x.set_data_from_numpy(X, binary_data=True)
    return client.infer(model, [x]).as_numpy("logits")


def test_config_json_target_device_gpu(config_server: ServeProcess, expected: np.ndarray) -> None:
    np.testing.assert_allclose(_infer(config_server, "cnn_f32"), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_infer(config_server, "cnn"), expected, rtol=2**-6, atol=2**-6 * np.abs(expected).max())
    status, body = config_server.get("/v1/config")
    assert status == 200 and {body[m]["model_version_status"][0]["state"] for m in ("cnn", "cnn_f32")} == {"AVAILABLE"}


def test_bad_input_to_a_gpu_model_is_4xx(config_server: ServeProcess, expected: np.ndarray) -> None:
    item = {"name": "image", "shape": [1, 3, 16, 64], "datatype": "FP32", "data": X.ravel().tolist()}
    r = requests.post(config_server.url + "/v2/models/cnn_f32/infer", json={"inputs": [item]}, timeout=30)
    assert r.status_code == 400 and "Invalid input shape" in r.json()["error"] and "image" in r.json()["error"]
    item["datatype"] = "INT64"
    r = requests.post(config_server.url + "/v2/models/cnn_f32/infer", json={"inputs": [item]}, timeout=30)
    assert r.status_code == 400 and "Invalid input precision" in r.json()["error"]
    np.testing.assert_allclose(_infer(config_server, "cnn_f32"), expected, rtol=1e-5, atol=1e-5)  # still serving


def test_command_line_target_device_gpu(cnn_dir: Path, expected: np.ndarray, tmp_path: Path) -> None:
    args = ["--model_path", str(cnn_dir), "--model_name", "m", "--target_device", "GPU",
            "--plugin_config", json.dumps(F32)]
    with _serve(args, tmp_path / "serve.log") as server:
        np.testing.assert_allclose(_infer(server, "m"), expected, rtol=1e-5, atol=1e-5)


def test_without_a_gpu_the_model_fails_to_load_naming_the_devices(cnn_dir: Path, tmp_path: Path) -> None:
    if backend.has_gpu():
        pytest.skip("this machine has a GPU")
    args = ["--model_path", str(cnn_dir), "--model_name", "m", "--target_device", "GPU"]
    with _serve(args, tmp_path / "serve.log", cli="vinerun.tools.cli", probe="/v2/health/live") as server:
        status, body = server.get("/v1/config")
        version = body["m"]["model_version_status"][0]
        assert version["state"] == "END" and "Available devices: CPU" in version["status"]["error_message"]
        assert server.get("/v2/models/m/ready")[0] == 404
        assert "GPU is not available" in server.log()
