"""Flags, config.json validation, version policies and repository scanning (no server needed)."""

from __future__ import annotations

import json

import pytest

from tests.serving.serving_utils import save_cnn
from vinerun.serving.config import ServerConfig, load_config_file, parse_shape
from vinerun.serving.policy import ConfigError, VersionPolicy
from vinerun.serving.repository import scan_versions


def test_ovms_defaults():
    cfg = ServerConfig.from_args(["--model_name", "m", "--model_path", "/m", "--port", "9000"])
    assert (cfg.port, cfg.rest_port, cfg.grpc_bind_address, cfg.rest_bind_address) == (9000, 0, "0.0.0.0", "0.0.0.0")
    assert (cfg.grpc_workers, cfg.log_level, cfg.file_system_poll_wait_seconds, cfg.metrics_enable) == (1, "INFO", 1,
                                                                                                      False)
    model = cfg.models[0]
    assert (model.nireq, model.target_device, model.version_policy) == (0, "CPU", VersionPolicy("latest", 1))


def test_flags_parse():
    cfg = ServerConfig.from_args(["--model_name", "m", "--model_path", "/m", "--rest_port", "8000", "--nireq", "4",
                                  "--plugin_config", '{"PERFORMANCE_HINT": "THROUGHPUT"}', "--shape", "(1,3,64,64)",
                                  "--model_version_policy", '{"all": {}}', "--target_device", "AUTO:GNA,CPU",
                                  "--metrics_enable", "--metrics_list", "ovms_requests_success,ovms_streams"])
    m = cfg.models[0]
    assert m.nireq == 4 and m.plugin_config == {"PERFORMANCE_HINT": "THROUGHPUT"} and m.shape == [1, 3, 64, 64]
    assert m.version_policy.kind == "all" and m.target_device == "AUTO:GNA,CPU" and cfg.log_path is None
    assert cfg.metrics_list == ["ovms_requests_success", "ovms_streams"]


@pytest.mark.parametrize("argv,words", [
    (["--model_name", "m", "--model_path", "/m"], "at least one of --port"),
    (["--model_name", "m", "--model_path", "/m", "--port", "9", "--rest_port", "9"], "must differ"),
    (["--config_path", "c.json", "--model_name", "m", "--model_path", "/m", "--port", "9"], "exclusive"),
    (["--model_name", "m", "--port", "9"], "go together"),
    (["--port", "9", "--metrics_enable"], "need --rest_port"),
    (["--rest_port", "9", "--metrics_list", "ovms_streams"], "needs --metrics_enable"),
    (["--rest_port", "9", "--metrics_enable", "--metrics_list", "ovms_bogus"], "ovms_bogus"),
    (["--rest_port", "9", "--rest_workers", "1"], "--rest_workers must be >= 2"),
    (["--rest_port", "9", "--plugin_config", "{nope"], "--plugin_config"),
    (["--rest_port", "9", "--model_name", "m", "--model_path", "/m", "--shape", "auto"], "not supported"),
    (["--rest_port", "9", "--log_level", "LOUD"], "--log_level"),
])
def test_flag_errors_name_the_flag(argv, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        ServerConfig.from_args(argv)


def test_no_model_arguments_selects_the_demo():
    cfg = ServerConfig.from_args([])
    assert cfg.demo and (cfg.rest_port, cfg.port) == (8000, 9000) and cfg.models[0].name == "demo"
    assert scan_versions(cfg.models[0].base_path) == {1: cfg.models[0].base_path + "/1/model.onnx"}


def _write(tmp_path, doc) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("doc,words", [
    ({"model_config_list": [], "extra": 1}, "unknown key 'extra' at the top level"),
    ({"model_config_list": [{"config": {"name": "m", "base_path": "m", "mean": 1}}]},
     "unknown key 'mean' at model_config_list[0].config"),
    ({"model_config_list": [{"config": {"base_path": "m"}}]}, "needs 'name'"),
    ({"model_config_list": [{"config": {"name": "m", "nireq": -1}}]}, "nireq must be >= 0"),
    ({"model_config_list": [{"config": {"name": "m", "model_version_policy": {"newest": {}}}}]}, "'newest'"),
    ({"model_config_list": [{"config": {"name": "m", "plugin_config": {"A": [1]}}}]}, "plugin_config.A"),
    ({"monitoring": {"metrics": {"enable": True, "x": 1}}, "model_config_list": []}, "'x' at monitoring.metrics"),
    ({}, "'model_config_list' is required"),
])
def test_config_json_schema(tmp_path, doc, words):
    with pytest.raises(ConfigError) as info:
        load_config_file(_write(tmp_path, doc))
    assert words in str(info.value)


def test_config_json_paths_relative_to_the_file(tmp_path):
    cfg = load_config_file(_write(tmp_path, {"model_config_list": [
        {"config": {"name": "m", "base_path": "models/m", "batch_size": "2", "shape": {"x": "(1,3)"},
                    "plugin_config": {"NUM_STREAMS": 2, "PERF_COUNT": True}}}]}))
    m = cfg.models[0]
    assert m.base_path == str(tmp_path / "models" / "m") and m.batch_size == 2 and m.shape == {"x": [1, 3]}
    assert len(cfg.md5) == 32


def test_version_policies():
    assert VersionPolicy.parse(None).select([3, 1, 2]) == [3]
    assert VersionPolicy.parse({"all": {}}).select([3, 1, 2]) == [1, 2, 3]
    assert VersionPolicy.parse({"latest": {"num_versions": 2}}).select([3, 1, 2]) == [2, 3]
    assert VersionPolicy.parse({"specific": {"versions": [1, 4]}}).select([3, 1, 2]) == [1]
    with pytest.raises(ConfigError, match="num_versions"):
        VersionPolicy.parse({"latest": {"num_versions": 0}})


def test_repository_scan(tmp_path):
    save_cnn(tmp_path / "1")
    save_cnn(tmp_path / "10")
    (tmp_path / "0").mkdir()
    (tmp_path / "abc").mkdir()
    (tmp_path / "3").mkdir()  # empty folder: not a version
    (tmp_path / "4").mkdir()
    (tmp_path / "4" / "model.xml").write_text("<net/>")  # .xml without .bin: not a model
    assert sorted(scan_versions(str(tmp_path))) == [1, 10]
    assert scan_versions(str(tmp_path / "1" / "model.onnx")) == {1: str(tmp_path / "1" / "model.onnx")}
    with pytest.raises(ConfigError, match="does not exist"):
        scan_versions(str(tmp_path / "missing"))


def test_parse_shape():
    assert parse_shape("(1,3,224,224)") == [1, 3, 224, 224]
    assert parse_shape('{"a": "(1,2)", "b": "[3]"}') == {"a": [1, 2], "b": [3]}
