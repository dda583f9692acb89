"""``vinerun benchmark``: the CLI run in-process on tiny models, and its building blocks."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import InputError
from vinerun.ir.types import Type
from vinerun.tools import benchmark_config as cfg
from vinerun.tools.benchmark_inputs import fill_inputs, input_infos, random_array
from vinerun.tools.benchmark_report import Statistics, percentile, summary_lines
from vinerun.tools.cli import main
from vinerun.tools.progress import ProgressBar


def _save(model: ov.Model, path: Path) -> str:
    ov.serialize(model, str(path))
    return str(path)


@pytest.fixture(scope="module")
def static_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    x = ops.parameter([1, 8], name="x")
    w = ops.constant(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32), name="w")
    y = ops.relu(ops.matmul(x, w, False, False, name="fc"), name="act")
    y.output(0).set_names({"y"})
    return _save(ov.Model([y], [x], "tiny"), tmp_path_factory.mktemp("m") / "tiny.xml")


@pytest.fixture(scope="module")
def dynamic_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    x = ops.parameter([-1, 4], name="x")
    y = ops.relu(ops.multiply(x, ops.constant(np.float32(2.0)), name="scale"), name="act")
    y.output(0).set_names({"y"})
    return _save(ov.Model([y], [x], "dyn"), tmp_path_factory.mktemp("m") / "dyn.xml")


def _run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    rc = main(["benchmark", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _summary(out: str) -> dict[str, str]:
    return dict(re.findall(r"\[ INFO \] +(Count|Duration|Median|Average|Min|Max|Throughput): +(.+)", out))


# --- the CLI ------------------------------------------------------------------------------------
def test_sync_run_prints_steps_and_summary(capsys, static_model):
    rc, out, err = _run(capsys, "-m", static_model, "-d", "CPU", "-api", "sync", "-niter", "5")
    assert rc == 0, err
    for n in range(1, 12):
        assert f"[Step {n}/11]" in out
    assert "Start inference synchronously, limits: 5 iterations" in out
    summary = _summary(out)
    assert summary["Count"] == "5 iterations"
    assert set(summary) == {"Count", "Duration", "Median", "Average", "Min", "Max", "Throughput"}
    assert summary["Throughput"].endswith("FPS") and float(summary["Throughput"].split()[0]) > 0
    assert re.search(r"PERFORMANCE_HINT: (PerformanceMode\.)?LATENCY", out)  # no -hint + sync means LATENCY
    assert err == ""  # no progress bar when stderr is not a terminal


def test_async_run_keeps_requests_in_flight(capsys, static_model):
    rc, out, err = _run(capsys, "-m", static_model, "-api", "async", "-nireq", "2", "-niter", "3", "-pc")
    assert rc == 0, err
    assert "Start inference asynchronously, 2 inference requests, limits: 4 iterations" in out
    assert "aligned by request number from 3 to 4" in out
    assert _summary(out)["Count"] == "4 iterations"
    assert "Performance counts for 0-th infer request" in out and "Performance counts for 1-th infer request" in out
    assert re.search(r"PERFORMANCE_HINT: (PerformanceMode\.)?THROUGHPUT", out)  # no -hint + async


def test_throughput_hint_defaults_to_async(capsys, static_model):
    rc, out, err = _run(capsys, "-m", static_model, "-hint", "throughput", "-niter", "2")
    assert rc == 0, err
    assert "Start inference asynchronously" in out and "inference requests" in out


def test_json_stats_report_is_written(capsys, static_model, tmp_path):
    folder = tmp_path / "new" / "reports"  # created, unlike benchmark_app
    rc, out, err = _run(capsys, "-m", static_model, "-api", "sync", "-niter", "4", "-report_type", "average_counters",
                        "-report_folder", str(folder), "-json_stats")
    assert rc == 0, err
    report = json.loads((folder / "benchmark_report.json").read_text())
    assert report["execution_results"]["total number of iterations"] == "4"
    assert float(report["execution_results"]["throughput"]) > 0
    assert report["configuration_setup"]["API"] == "sync"
    counters = json.loads((folder / "benchmark_average_counters_report.json").read_text())
    names = [n["name"] for n in counters["avg_performance"]["nodes"]]
    assert "fc" in names and "act" in names


def test_csv_report_by_default(capsys, static_model, tmp_path):
    rc, _, err = _run(capsys, "-m", static_model, "-api", "sync", "-niter", "2", "-report_folder", str(tmp_path))
    assert rc == 0, err
    text = (tmp_path / "benchmark_report.csv").read_text()
    assert "total number of iterations;2" in text


def test_pc_prints_per_layer_counters(capsys, static_model):
    rc, out, err = _run(capsys, "-m", static_model, "-api", "sync", "-niter", "3", "-pc")
    assert rc == 0, err
    assert "Performance counts for 0-th infer request" in out
    rows = [line for line in out.splitlines() if "layerType:" in line]
    assert any(r.startswith("fc ") and "MatMul" in r and "Status.EXECUTED" in r for r in rows), rows
    assert any(r.startswith("act ") and "realTime (ms):" in r and "cpuTime (ms):" in r for r in rows)
    assert "Total time:" in out and "PERF_COUNT: YES" in out


def test_shape_makes_a_dynamic_model_static(capsys, dynamic_model):
    rc, out, err = _run(capsys, "-m", dynamic_model, "-api", "sync", "-niter", "2", "-shape", "x[3,4]")
    assert rc == 0, err
    assert "x (node: x) : f32 / [...] / [?,4]" in out
    assert "x (node: x) : f32 / [...] / [3,4]" in out
    assert _summary(out)["Count"] == "2 iterations"


def test_dynamic_model_needs_a_data_shape(capsys, dynamic_model):
    rc, _, err = _run(capsys, "-m", dynamic_model, "-api", "sync", "-niter", "2")
    assert rc != 0
    assert "Input 'x' has a dynamic shape" in err and "-data_shape" in err and len(err.strip().splitlines()) == 1


def test_data_shapes_cycle_in_full_mode(capsys, dynamic_model):
    rc, out, err = _run(capsys, "-m", dynamic_model, "-api", "sync", "-niter", "4", "-data_shape", "x[1,4][5,4]")
    assert rc == 0, err
    assert "full mode" in out and _summary(out)["Count"] == "4 iterations"


def test_batch_flag_resizes_the_n_dimension(capsys, dynamic_model):
    rc, out, err = _run(capsys, "-m", dynamic_model, "-api", "sync", "-niter", "2", "-layout", "x[NC]", "-b", "6")
    assert rc == 0, err
    assert "Model batch size: 6" in out and "x (node: x) : f32 / [N,C] / [6,4]" in out


@pytest.mark.parametrize("argv, words", [
    (["-d", "NOPE"], ["NOPE"]),
    (["-latency_percentile", "0"], ["-latency_percentile"]),
    (["-shape", "zz[1,8]"], ["no input named 'zz'"]),
    (["-hint", "latency", "-nstreams", "2"], ["-hint none"]),
    (["-infer_precision", "f7"], ["INFERENCE_PRECISION_HINT"]),
])
def test_bad_values_give_one_line_errors(capsys, static_model, argv, words):
    rc, _, err = _run(capsys, "-m", static_model, "-api", "sync", "-niter", "1", *argv)
    assert rc != 0
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("vinerun benchmark: error:")
    for w in words:
        assert w in err


def test_unreadable_model_is_a_one_line_error(capsys, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    for path in (str(bad), str(tmp_path / "missing.onnx")):
        rc, _, err = _run(capsys, "-m", path, "-niter", "1")
        assert rc != 0 and len(err.strip().splitlines()) == 1 and Path(path).name in err


def test_unknown_flag_is_a_one_line_error(capsys, static_model):
    with pytest.raises(SystemExit) as e:
        main(["benchmark", "-m", static_model, "-nope", "3"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "-nope" in err


def test_niter_zero_compiles_and_exits(capsys, dynamic_model):
    rc, out, err = _run(capsys, "-m", dynamic_model, "-niter", "0", "-api", "sync")
    assert rc == 0, err
    assert "[Step 8/11]" in out and "[Step 9/11]" not in out


# --- building blocks --------------------------------------------------------------------------
def test_percentile_is_nearest_rank():
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.0
    assert percentile(values, 90) == 4.0
    assert percentile(values, 1) == 1.0


def test_statistics_and_summary_units():
    stats = Statistics([0.5, 0.25, 0.75], iterations=3, duration_s=0.003, batch=2)
    assert (stats.min_ms, stats.max_ms, stats.median_ms) == (0.25, 0.75, 0.5)
    assert stats.fps == pytest.approx(2000.0)
    lines = summary_lines(stats, ["CPU"])
    assert "   Median:        500.00 us" in lines  # microseconds below 1 ms average, as benchmark_app
    assert lines[-1] == "Throughput:   2000.00 FPS"
    stats = Statistics([12.0, 10.0], iterations=2, duration_s=0.02, latency_percentile=90)
    assert "   90 percentile:     12.00 ms" in summary_lines(stats, ["CPU"])


def test_parse_input_map_and_device_values():
    assert cfg.parse_input_map("[1,3,224,224]") == {"": ["1,3,224,224"]}
    assert cfg.parse_input_map("a[1,2],b[?,4][1..8,4]") == {"a": ["1,2"], "b": ["?,4", "1..8,4"]}
    with pytest.raises(cfg.BenchmarkArgumentError, match="-shape"):
        cfg.parse_input_map("a[1,2")
    assert cfg.value_for_device("CPU:4,GPU:1", "CPU", "-nstreams") == "4"
    assert cfg.value_for_device("CPU:4", "GPU", "-nstreams") is None
    assert cfg.value_for_device("3", "CPU", "-nstreams") == "3"


def test_hint_and_api_defaults_follow_benchmark_app():
    assert cfg.resolve_hint_and_api(None, "sync", False) == ("LATENCY", "sync")
    assert cfg.resolve_hint_and_api(None, "async", False) == ("THROUGHPUT", "async")
    assert cfg.resolve_hint_and_api("latency", None, False) == ("LATENCY", "sync")
    assert cfg.resolve_hint_and_api("tput", None, False) == ("THROUGHPUT", "async")
    assert cfg.resolve_hint_and_api(None, None, True) == (None, "async")
    assert cfg.resolve_hint_and_api("none", "sync", True) == (None, "sync")


@pytest.mark.parametrize("type_name, low, high", [
    ("f32", 0, 255), ("f16", 0, 255), ("bf16", 0, 255), ("u8", 0, 255), ("i8", 0, 127), ("i32", 0, 255),
    ("i64", 0, 255), ("boolean", 0, 1), ("u16", 0, 255),
])
def test_random_data_per_element_type(type_name, low, high):
    t = Type(type_name)
    a = random_array(t, [64, 64], np.random.default_rng(0), "x")
    assert a.dtype == t.to_dtype() and a.shape == (64, 64)
    values = a.astype(np.float64)
    assert values.min() >= low and values.max() <= high
    assert len(np.unique(values)) > 1


def test_fill_inputs_is_seeded_and_cycles_shapes():
    x = ops.parameter([-1, 4], name="x")
    model = ov.Model([ops.relu(x)], [x])
    infos = input_infos(model.inputs, {0: [[1, 4], [2, 4]]})
    a, b = fill_inputs(infos), fill_inputs(infos)
    assert [s["x"].shape for s in a] == [(1, 4), (2, 4)]
    np.testing.assert_array_equal(a[1]["x"], b[1]["x"])
    with pytest.raises(InputError, match="does not fit"):
        input_infos(model.inputs, {0: [[1, 5]]})


def test_progress_bar_draws_only_when_enabled():
    quiet, shown = io.StringIO(), io.StringIO()
    for stream, enabled in ((quiet, None), (shown, True)):
        bar = ProgressBar(4, stream, enabled, unit="iterations")
        for i in range(1, 5):
            bar.update(i)
        bar.finish()
    assert quiet.getvalue() == ""  # a StringIO is not a terminal
    assert shown.getvalue().endswith("100% 4/4 iterations\n")
    half = ProgressBar(10, io.StringIO(), True, width=10)
    half.update(5)
    assert half.render().startswith("[=====>    ]  50%")
