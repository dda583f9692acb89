"""``vinerun serve`` with a quantized (ONNX QDQ) model in the repository answers KServe v2 REST requests, on the CPU
and on the GPU (the stand-in, in the test-only launcher)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import requests

from tests.serving.serving_utils import ServeProcess, reference
from tests.unit._quantized import qdq_conv_onnx

X = np.random.default_rng(0).uniform(-1.5, 1.5, (1, 3, 16, 16)).astype(np.float32)


@pytest.fixture(scope="module")
def qdq_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("qdq_repo") / "qdq"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "model.onnx").write_bytes(qdq_conv_onnx())
    return folder


def _infer(proc: ServeProcess, name: str) -> np.ndarray:
    body = {"inputs": [{"name": "x", "shape": [1, 3, 16, 16], "datatype": "FP32", "data": X.ravel().tolist()}]}
    r = requests.post(f"{proc.url}/v2/models/{name}/infer", json=body, timeout=60)
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert out["name"] == "y" and out["shape"] == [1, 10]
    return np.array(out["data"], np.float32).reshape(1, 10)


@pytest.mark.parametrize("device", ["CPU", "GPU"])
def test_serve_answers_a_qdq_model(qdq_dir: Path, tmp_path: Path, device: str) -> None:
    args = ["--model_path", str(qdq_dir), "--model_name", "qdq", "--target_device", device,
            "--file_system_poll_wait_seconds", "0"]
    cli = "tests.serving.gpu_stand_in_cli" if device == "GPU" else "vinerun.tools.cli"
    proc = ServeProcess(args, grpc=False, log_path=tmp_path / "serve.log", cli=cli).wait_ready()
    try:
        got = _infer(proc, "qdq")
        bad = requests.post(f"{proc.url}/v2/models/qdq/infer", timeout=30, json={
            "inputs": [{"name": "x", "shape": [1, 3, 16], "datatype": "FP32", "data": [0.0] * 48}]})
        assert 400 <= bad.status_code < 500 and "x" in bad.text
    finally:
        assert proc.stop() == 0
    want = reference(qdq_dir / "1" / "model.onnx", {"x": X})[0]
    if device == "CPU":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:  # f16 float layers; a quantization step may flip
        assert np.max(np.abs(got - want)) <= 0.07 * np.max(np.abs(want))
