"""Server settings: OVMS's command-line flags and defaults, and config.json.

>>> cfg = ServerConfig.from_args(["--model_name", "m", "--model_path", "/models/m", "--rest_port", "8000"])
>>> cfg.rest_port, cfg.port, cfg.models[0].name, cfg.models[0].version_policy.kind
(8000, 0, 'm', 'latest')
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vinerun.serving.policy import ConfigError, VersionPolicy
from vinerun.serving.schema import validate_config

#: the metric families served when --metrics_list is not given (OVMS's default set)
DEFAULT_METRICS = ("ovms_requests_success", "ovms_requests_fail", "ovms_request_time_us", "ovms_streams",
                   "ovms_inference_time_us", "ovms_wait_for_infer_req_time_us", "ovms_current_requests")
OPTIONAL_METRICS = ("ovms_infer_req_queue_size", "ovms_infer_req_active")
DEMO_DIR = Path(__file__).resolve().parent / "demo"


@dataclass
class ModelConfig:
    """One served model (a ``model_config_list`` entry, or the single-model flags).

    >>> ModelConfig("resnet", "/models/resnet", nireq=4).version_policy.kind
    'latest'
    """

    name: str
    base_path: str
    target_device: str = "CPU"
    plugin_config: dict[str, Any] = field(default_factory=dict)
    nireq: int = 0
    batch_size: int | None = None
    shape: Any = None
    layout: Any = None
    version_policy: VersionPolicy = field(default_factory=VersionPolicy)
    allow_cache: bool = True

    @classmethod
    def from_json(cls, cfg: dict[str, Any], config_dir: Path) -> ModelConfig:
        """From a validated ``model_config_list[i].config`` (``base_path`` relative to config.json's folder)."""
        base = cfg.get("base_path", cfg["name"])
        if "://" in base:
            raise ConfigError(f"model {cfg['name']!r}: remote base_path {base!r} is not supported; use a local path")
        return cls(name=cfg["name"], base_path=str((config_dir / base).resolve()),
                   target_device=cfg.get("target_device") or "CPU", plugin_config=dict(cfg.get("plugin_config", {})),
                   nireq=int(cfg.get("nireq", 0)), batch_size=parse_batch_size(cfg.get("batch_size")),
                   shape=parse_shape(cfg.get("shape")), layout=cfg.get("layout"),
                   version_policy=VersionPolicy.parse(cfg.get("model_version_policy")),
                   allow_cache=bool(cfg.get("allow_cache", True)))


def parse_batch_size(value: Any) -> int | None:
    """``--batch_size``: an integer >= 1 (``auto`` is not supported)."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        raise ConfigError("batch_size 'auto' (reshape per request) is not supported; give an integer")
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"batch_size must be an integer, got {value!r}") from None
    if n < 1:
        raise ConfigError(f"batch_size must be >= 1, got {n}")
    return n


def _shape_list(text: str, where: str) -> list[int]:
    body = text.strip().strip("()[]")
    try:
        return [int(d) for d in body.split(",") if d.strip()]
    except ValueError:
        raise ConfigError(f"{where} must look like (1,3,224,224), got {text!r}") from None


def parse_shape(value: Any) -> list[int] | dict[str, list[int]] | None:
    """``--shape``: ``(1,3,224,224)``, or JSON ``{"input": "(1,3,224,224)"}``; ``auto`` is not supported."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "auto":
            raise ConfigError("shape 'auto' (reshape per request) is not supported; give a fixed shape")
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                raise ConfigError(f"shape is not valid JSON ({e}): {text!r}") from None
        else:
            return _shape_list(text, "shape")
    if isinstance(value, dict):
        return {str(k): _shape_list(str(v), f"shape of input {k!r}") for k, v in value.items()}
    raise ConfigError(f"shape must be a string or an object, got {value!r}")


def parse_plugin_config(value: Any) -> dict[str, Any]:
    """``--plugin_config``: a JSON object such as ``{"PERFORMANCE_HINT": "LATENCY"}``."""
    if not value:
        return {}
    try:
        doc = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as e:
        raise ConfigError(f"--plugin_config is not valid JSON ({e}): {value!r}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"--plugin_config must be a JSON object, got {value!r}")
    return doc


@dataclass
class ServerConfig:
    """Everything ``vinerun serve`` was told, with OVMS's defaults.

    >>> ServerConfig.from_args([]).models[0].name      # no model arguments: the bundled demo
    'demo'
    """

    port: int = 0
    rest_port: int = 0
    grpc_bind_address: str = "0.0.0.0"
    rest_bind_address: str = "0.0.0.0"
    grpc_workers: int = 1
    rest_workers: int | None = None
    log_level: str = "INFO"
    log_path: str | None = None
    file_system_poll_wait_seconds: int = 1
    cache_dir: str | None = None
    metrics_enable: bool = False
    metrics_list: list[str] | None = None
    config_path: str | None = None
    models: list[ModelConfig] = field(default_factory=list)
    demo: bool = False
    max_request_bytes: int = 1 << 30

    @classmethod
    def from_args(cls, argv: list[str]) -> ServerConfig:
        parser = argparse.ArgumentParser(prog="vinerun serve")
        add_arguments(parser)
        return cls.from_namespace(parser.parse_args(argv))

    @classmethod
    def from_namespace(cls, a: argparse.Namespace) -> ServerConfig:
        """Validate the parsed flags with OVMS's rules; no model arguments at all selects the demo model."""
        model_flags = [a.model_name, a.model_path]
        if a.config_path and any(model_flags):
            raise ConfigError("Model parameters in CLI are exclusive with the config file (--config_path)")
        if bool(a.model_name) != bool(a.model_path):
            raise ConfigError("--model_name and --model_path go together")
        demo = not a.config_path and not a.model_path
        cfg = cls(port=a.port, rest_port=a.rest_port, grpc_bind_address=a.grpc_bind_address,
                  rest_bind_address=a.rest_bind_address, grpc_workers=a.grpc_workers, rest_workers=a.rest_workers,
                  log_level=a.log_level.upper(), log_path=a.log_path,
                  file_system_poll_wait_seconds=a.file_system_poll_wait_seconds,
                  cache_dir=a.cache_dir or ("/opt/cache" if os.path.isdir("/opt/cache") else None),
                  metrics_enable=a.metrics_enable,
                  metrics_list=[m.strip() for m in a.metrics_list.split(",") if m.strip()] if a.metrics_list else None,
                  config_path=a.config_path, demo=demo, max_request_bytes=a.max_request_bytes)
        if demo and not cfg.port and not cfg.rest_port:
            cfg.rest_port, cfg.port = 8000, 9000
        if demo:
            a.model_name, a.model_path = "demo", str(DEMO_DIR / "cnn")
            a.target_device = a.target_device or "CPU"
        if a.model_path:
            cfg.models = [ModelConfig(
                name=a.model_name, base_path=str(Path(a.model_path).resolve()), target_device=a.target_device or "CPU",
                plugin_config=parse_plugin_config(a.plugin_config), nireq=a.nireq,
                batch_size=parse_batch_size(a.batch_size), shape=parse_shape(a.shape), layout=a.layout,
                version_policy=VersionPolicy.parse(a.model_version_policy))]
        cfg.check()
        return cfg

    def check(self) -> None:
        """OVMS's cross-flag rules (``src/config.cpp``)."""
        if not self.port and not self.rest_port:
            raise ConfigError("at least one of --port (gRPC) and --rest_port must be set")
        if self.port and self.port == self.rest_port:
            raise ConfigError(f"--port and --rest_port must differ (both {self.port})")
        for name, p in (("--port", self.port), ("--rest_port", self.rest_port)):
            if not 0 <= p <= 65535:
                raise ConfigError(f"{name} must be in 0..65535, got {p}")
        if not 1 <= self.grpc_workers <= (os.cpu_count() or 1):
            raise ConfigError(f"--grpc_workers must be in 1..{os.cpu_count()} (the core count), "
                              f"got {self.grpc_workers}")
        if self.rest_workers is not None:
            if not self.rest_port:
                raise ConfigError("--rest_workers needs --rest_port")
            if self.rest_workers < 2:
                raise ConfigError(f"--rest_workers must be >= 2, got {self.rest_workers}")
        if (self.metrics_enable or self.metrics_list) and not self.rest_port:
            raise ConfigError("--metrics_enable and --metrics_list need --rest_port (metrics are served over REST)")
        if self.metrics_list and not self.metrics_enable:
            raise ConfigError("--metrics_list needs --metrics_enable")
        for m in self.metrics_list or []:
            if m not in DEFAULT_METRICS + OPTIONAL_METRICS:
                raise ConfigError(f"--metrics_list: unknown metric {m!r}; known: "
                                  f"{', '.join(DEFAULT_METRICS + OPTIONAL_METRICS)}")
        if self.log_level not in ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR"):
            raise ConfigError(f"--log_level must be TRACE, DEBUG, INFO, WARNING or ERROR, got {self.log_level!r}")
        if self.file_system_poll_wait_seconds < 0:
            raise ConfigError("--file_system_poll_wait_seconds must be >= 0")


@dataclass
class ConfigFile:
    """A parsed and validated config.json, with the MD5 of its content (what the poller compares).

    >>> load_config_file("config.json").models[0].name   # doctest: +SKIP
    'resnet'
    """

    models: list[ModelConfig]
    md5: str
    metrics: dict[str, Any]
    raw: dict[str, Any]


def load_config_file(path: str) -> ConfigFile:
    """Read and validate ``path``; raises ``ConfigError`` naming the bad key."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path!r}: {e.strerror}") from None
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path!r} is not valid JSON: {e}") from None
    validate_config(doc)
    for key in ("pipeline_config_list", "mediapipe_config_list", "custom_node_library_config_list",
                "custom_loader_config_list"):
        if doc.get(key):
            raise ConfigError(f"config.json: {key} (DAG pipelines, MediaPipe graphs, custom nodes/loaders) "
                              "is not supported")
    config_dir = Path(path).resolve().parent
    models = [ModelConfig.from_json(e["config"], config_dir) for e in doc["model_config_list"]]
    names = [m.name for m in models]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(f"config.json: model name {n!r} appears more than once")
    return ConfigFile(models, hashlib.md5(data).hexdigest(), doc.get("monitoring", {}).get("metrics", {}), doc)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """OVMS's flags, with OVMS's defaults."""
    g = p.add_argument_group("server")
    g.add_argument("--port", type=int, default=0, help="gRPC port (0 = gRPC off) (default: 0)")
    g.add_argument("--rest_port", type=int, default=0,
                   help="REST port (0 = REST off; with no model arguments the demo uses 8000) (default: 0)")
    g.add_argument("--grpc_bind_address", default="0.0.0.0", help="address gRPC listens on (default: 0.0.0.0)")
    g.add_argument("--rest_bind_address", default="0.0.0.0", help="address REST listens on (default: 0.0.0.0)")
    g.add_argument("--grpc_workers", type=int, default=1, help="gRPC server threads scale (1..cores) (default: 1)")
    g.add_argument("--rest_workers", type=int, default=None,
                   help="REST workers (>= 2; accepted for compatibility: one asyncio process serves REST)")
    g.add_argument("--log_level", default="INFO", help="TRACE, DEBUG, INFO, WARNING or ERROR (default: INFO)")
    g.add_argument("--log_path", default=None, help="write the log to this file instead of stderr")
    g.add_argument("--file_system_poll_wait_seconds", type=int, default=1,
                   help="how often config.json and version folders are re-checked; 0 = never (default: 1)")
    g.add_argument("--cache_dir", default=None, help="model cache folder (default: /opt/cache if it exists)")
    g.add_argument("--metrics_enable", action="store_true",
                   help="serve Prometheus metrics at /metrics on the REST port")
    g.add_argument("--metrics_list", default=None,
                   help="comma list of metric families to serve (needs --metrics_enable)")
    g.add_argument("--config_path", default=None,
                   help="config.json with model_config_list (exclusive with model flags)")
    g.add_argument("--max_request_bytes", type=int, default=1 << 30,
                   help="largest request body accepted (default: 1 GiB)")
    m = p.add_argument_group("single model (without --config_path)")
    m.add_argument("--model_name", default=None, help="name clients use for the model")
    m.add_argument("--model_path", default=None, help="folder with numbered version folders (or one model file)")
    m.add_argument("--target_device", default="", help="device string, e.g. CPU, GNA, AUTO:GNA,CPU (default: CPU)")
    m.add_argument("--plugin_config", default=None,
                   help='device properties as JSON, e.g. {"PERFORMANCE_HINT":"LATENCY"}')
    m.add_argument("--nireq", type=int, default=0, help="infer requests per version (0 = the device's optimum)")
    m.add_argument("--batch_size", default=None, help="reshape the first dimension of every input to this")
    m.add_argument("--shape", default=None, help='input shape, e.g. (1,3,224,224) or {"input":"(1,3,224,224)"}')
    m.add_argument("--layout", default=None, help="input layout, e.g. NCHW (layout conversion such as NHWC:NCHW is "
                                                  "not supported)")
    m.add_argument("--model_version_policy", default=None,
                   help='e.g. {"latest":{"num_versions":2}}, {"all":{}}, {"specific":{"versions":[1,3]}}')
