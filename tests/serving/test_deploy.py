"""The Dockerfile and the KServe ServingRuntime manifest say what the spec (serving.md section 6) asks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from vinerun.serving.config import ServerConfig

ROOT = Path(__file__).resolve().parents[2]


def _flags(args: list[str]) -> list[str]:
    out = []
    for a in args:
        out += a.split("=", 1) if a.startswith("--") and "=" in a else [a]
    return out


def test_servingruntime_manifest():
    doc = yaml.safe_load((ROOT / "deploy" / "kserve" / "servingruntime.yaml").read_text())
    assert doc["apiVersion"] == "serving.kserve.io/v1alpha1" and doc["kind"] == "ServingRuntime"
    assert doc["metadata"]["name"] == "vinerun"
    spec = doc["spec"]
    assert {"name": "openvino", "version": "1", "autoSelect": True} in spec["supportedModelFormats"]
    assert set(spec["protocolVersions"]) == {"v2", "grpc-v2"}
    assert spec["annotations"] == {"prometheus.kserve.io/port": "8080", "prometheus.kserve.io/path": "/metrics"}
    (container,) = spec["containers"]
    assert container["name"] == "kserve-container"
    assert container["startupProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": 8080}
    args = container["args"]
    assert "--model_name={{.Name}}" in args and "--model_path=/mnt/models" in args
    assert "--rest_port=8080" in args and "--port=9000" in args
    # the args are flags `vinerun serve` accepts, with OVMS's rules
    cfg = ServerConfig.from_args(_flags([a.replace("{{.Name}}", "m") for a in args]))
    assert (cfg.rest_port, cfg.port, cfg.models[0].base_path, cfg.metrics_enable) == (8080, 9000, "/mnt/models", True)


def test_dockerfile():
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11", text, re.M)
    entry = re.search(r"^ENTRYPOINT (.*)$", text, re.M).group(1)
    assert json.loads(entry) == ["vinerun", "serve"]
    cmd = json.loads(re.search(r"^CMD (.*)$", text, re.M).group(1))
    cfg = ServerConfig.from_args(cmd)
    assert cfg.demo and (cfg.rest_port, cfg.port) == (8000, 9000)
    assert re.search(r"^EXPOSE 8000 9000$", text, re.M)
    assert "torch==2.13.0" in text and "COPY vinerun ./vinerun" in text
    assert re.search(r"^USER (?!root)", text, re.M)
