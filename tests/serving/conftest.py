"""A real ``vinerun serve`` subprocess on free loopback ports, serving a temporary model repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.serving.serving_utils import ServeProcess, save_cnn, save_cnn_ir, save_echo


@pytest.fixture(scope="session")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``cnn`` (ONNX, versions 1 and 2 with different weights), ``cnn_ir`` (IR), ``echo`` (BYTES) + config.json."""
    root = tmp_path_factory.mktemp("repo")
    save_cnn(root / "cnn" / "1", seed=0)
    save_cnn(root / "cnn" / "2", seed=1)
    save_cnn_ir(root / "cnn_ir" / "1", seed=2)
    save_echo(root / "echo" / "1")
    config = {"model_config_list": [
        {"config": {"name": "cnn", "base_path": "cnn", "model_version_policy": {"all": {}}, "nireq": 2}},
        {"config": {"name": "cnn_ir", "base_path": "cnn_ir", "target_device": "CPU"}},
        {"config": {"name": "echo", "base_path": "echo"}},
    ]}
    (root / "config.json").write_text(json.dumps(config))
    return root


@pytest.fixture(scope="session")
def server(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> ServeProcess:
    """The server for the client and bad-input tests (REST and gRPC), shut down after the session."""
    log = tmp_path_factory.mktemp("log") / "serve.log"
    proc = ServeProcess(["--config_path", str(repository / "config.json"), "--metrics_enable",
                         "--file_system_poll_wait_seconds", "0", "--max_request_bytes", str(4 << 20)],
                        log_path=log)
    try:
        yield proc.wait_ready()
    finally:
        proc.stop()
