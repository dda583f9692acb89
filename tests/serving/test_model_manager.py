"""Version policies, reshaping flags and failed loads through the ModelManager (in process)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.serving.serving_utils import save_cnn
from vinerun.runtime import Core
from vinerun.serving.config import ServerConfig
from vinerun.serving.dataplane import DataPlane, InferRequest
from vinerun.serving.errors import ModelVersionNotFound
from vinerun.serving.metrics import ServingMetrics
from vinerun.serving.model_manager import ModelManager


def _manager(path, *flags: str) -> ModelManager:
    cfg = ServerConfig.from_args(["--model_name", "m", "--model_path", str(path), "--rest_port", "1",
                                  "--file_system_poll_wait_seconds", "0", *flags])
    manager = ModelManager(Core(), cfg)
    manager.start()
    return manager


@pytest.fixture
def repo(tmp_path):
    for v in (1, 2, 5):
        save_cnn(tmp_path / "m" / str(v), seed=v)
    return tmp_path / "m"


@pytest.mark.parametrize("policy,served", [
    (None, [5]), ('{"latest": {"num_versions": 2}}', [2, 5]), ('{"all": {}}', [1, 2, 5]),
    ('{"specific": {"versions": [1, 3]}}', [1]),
])
def test_version_policy(repo, policy, served):
    manager = _manager(repo, *(["--model_version_policy", policy] if policy else []))
    try:
        assert manager.entry("m").available() == served
        with manager.use("m", None) as version:
            assert version.version == served[-1]
        with pytest.raises(ModelVersionNotFound):
            manager.acquire("m", "3")
    finally:
        manager.stop()


def test_shape_flag_reshapes_before_compiling(repo):
    manager = _manager(repo, "--shape", "(2,3,64,64)")
    try:
        plane = DataPlane(manager)
        assert plane.model_metadata("m").inputs[0].shape == [2, 3, 64, 64]
        x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
        assert plane.infer(InferRequest("m", None, None, {"image": x})).outputs["logits"].shape == (2, 10)
    finally:
        manager.stop()


def test_batch_size_flag(repo):
    manager = _manager(repo, "--batch_size", "3")
    try:
        assert DataPlane(manager).model_metadata("m").inputs[0].shape == [3, 3, 32, 32]
    finally:
        manager.stop()


def test_a_broken_version_is_skipped_and_reported(repo):
    (repo / "7").mkdir()
    (repo / "7" / "model.onnx").write_bytes(b"not a model")
    manager = _manager(repo, "--model_version_policy", '{"all": {}}')
    try:
        entry = manager.entry("m")
        assert entry.available() == [1, 2, 5]  # the others are served
        status = manager.version_status("m", "7")[0]
        assert status.state == "END" and status.error_code == 2 and "model.onnx" in status.error_message
        with pytest.raises(ModelVersionNotFound, match="failed to load"):
            manager.acquire("m", "7")
    finally:
        manager.stop()


def test_metrics_list_limits_the_families():
    metrics = ServingMetrics(["ovms_streams"])
    metrics.set("ovms_streams", ("m", "1"), 2)
    metrics.request("KServe", "REST", "ModelInfer", "m", "1", ok=True)
    text = metrics.render().decode()
    assert 'ovms_streams{name="m",version="1"} 2.0' in text and "ovms_requests_success" not in text
