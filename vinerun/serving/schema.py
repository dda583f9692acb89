"""config.json validation following OVMS's ``src/schema.cpp`` (``additionalProperties: false`` everywhere).

>>> validate_config({"model_config_list": [{"config": {"name": "m", "base_path": "/models/m"}}]})
>>> validate_config({"model_config_list": [], "extra": 1})
Traceback (most recent call last):
...
vinerun.serving.policy.ConfigError: config.json: unknown key 'extra' at the top level; allowed: ...
"""

from __future__ import annotations

from typing import Any

from vinerun.serving.policy import ConfigError

TOP_KEYS = {"model_config_list", "pipeline_config_list", "mediapipe_config_list", "custom_node_library_config_list",
            "custom_loader_config_list", "monitoring"}
MODEL_KEYS = {"name", "base_path", "batch_size", "shape", "layout", "model_version_policy", "nireq", "target_device",
              "allow_cache", "plugin_config", "graph_path", "subconfig", "custom_loader_options", "stateful",
              "low_latency_transformation", "max_sequence_number", "idle_sequence_cleanup"}
MONITORING_KEYS = {"metrics"}
METRICS_KEYS = {"enable", "metrics_list"}


def _check_keys(obj: Any, allowed: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise ConfigError(f"config.json: {where} must be an object, got {type(obj).__name__}")
    for key in obj:
        if key not in allowed:
            raise ConfigError(f"config.json: unknown key {key!r} at {where}; allowed: {', '.join(sorted(allowed))}")


def _check_type(value: Any, types: tuple[type, ...], where: str) -> None:
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        names = " or ".join(t.__name__ for t in types)
        raise ConfigError(f"config.json: {where} must be {names}, got {value!r}")


def _validate_model(entry: Any, i: int) -> None:
    _check_keys(entry, {"config"}, f"model_config_list[{i}]")
    if "config" not in entry:
        raise ConfigError(f"config.json: model_config_list[{i}] needs a 'config' object")
    cfg = entry["config"]
    where = f"model_config_list[{i}].config"
    _check_keys(cfg, MODEL_KEYS, where)
    if "name" not in cfg:
        raise ConfigError(f"config.json: {where} needs 'name'")
    _check_type(cfg["name"], (str,), f"{where}.name")
    for key in ("base_path", "target_device", "graph_path", "subconfig"):
        if key in cfg:
            _check_type(cfg[key], (str,), f"{where}.{key}")
    if "batch_size" in cfg:
        _check_type(cfg["batch_size"], (int, str), f"{where}.batch_size")
    for key in ("shape", "layout"):
        if key in cfg:
            _check_type(cfg[key], (str, dict), f"{where}.{key}")
    if "nireq" in cfg:
        _check_type(cfg["nireq"], (int,), f"{where}.nireq")
        if cfg["nireq"] < 0:
            raise ConfigError(f"config.json: {where}.nireq must be >= 0, got {cfg['nireq']}")
    if "allow_cache" in cfg:
        _check_type(cfg["allow_cache"], (bool,), f"{where}.allow_cache")
    if "plugin_config" in cfg:
        _check_type(cfg["plugin_config"], (dict,), f"{where}.plugin_config")
        for k, v in cfg["plugin_config"].items():
            _check_type(v, (str, bool, int, float), f"{where}.plugin_config.{k}")
    if "model_version_policy" in cfg:
        _check_keys(cfg["model_version_policy"], {"all", "latest", "specific"}, f"{where}.model_version_policy")
    if "custom_loader_options" in cfg:
        _check_type(cfg["custom_loader_options"], (dict,), f"{where}.custom_loader_options")


def validate_config(doc: Any) -> None:
    """Raise ``ConfigError`` naming the first key or value that OVMS's schema rejects."""
    _check_keys(doc, TOP_KEYS, "the top level")
    if "model_config_list" not in doc:
        raise ConfigError("config.json: 'model_config_list' is required")
    models = doc["model_config_list"]
    _check_type(models, (list,), "model_config_list")
    for i, entry in enumerate(models):
        _validate_model(entry, i)
    for key in ("pipeline_config_list", "mediapipe_config_list", "custom_node_library_config_list",
                "custom_loader_config_list"):
        if key in doc:
            _check_type(doc[key], (list,), key)
    if "monitoring" in doc:
        _check_keys(doc["monitoring"], MONITORING_KEYS, "monitoring")
        if "metrics" in doc["monitoring"]:
            metrics = doc["monitoring"]["metrics"]
            _check_keys(metrics, METRICS_KEYS, "monitoring.metrics")
            if "enable" in metrics:
                _check_type(metrics["enable"], (bool,), "monitoring.metrics.enable")
            if "metrics_list" in metrics:
                _check_type(metrics["metrics_list"], (list,), "monitoring.metrics.metrics_list")
