"""Smoke test of benchmarks/compare.py on a tiny CNN: the measuring functions, the table, the JSON
and the memory child run end to end (no timed assertions: only that figures come out)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from vinerun.models import build_onnx, sample_inputs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import compare  # noqa: E402
import contenders  # noqa: E402
from model_zoo import ModelSpec  # noqa: E402


@pytest.fixture
def tiny(tmp_path: Path) -> ModelSpec:
    path = str(tmp_path / "cnn.onnx")
    onnx.save(build_onnx("cnn", image=16), path)
    return ModelSpec("tiny", lambda folder: path, lambda: sample_inputs("cnn", image=16))


def test_measure_model_gives_every_figure_for_vinerun(tiny: ModelSpec) -> None:
    chosen = contenders.available(bf16=False, runtimes=("vinerun", "onnxruntime"))
    rows = compare.measure_model(tiny, tiny.build(""), chosen, seconds=0.05, rounds=2, compile_reps=1, memory=False)
    ours = rows[0]
    assert ours.contender == "vinerun f32" and ours.error is None
    assert ours.compile_ms > 0 and ours.latency_ms > 0 and ours.fps > 0
    assert len(ours.latency_turns_ms) == len(ours.fps_turns) == 2
    if len(rows) > 1:  # onnxruntime installed: it is the agreement reference, and agrees
        assert ours.reference == "onnxruntime f32" and ours.max_abs_diff < 1e-4
    text = compare.table(rows)
    assert "| tiny | vinerun f32 |" in text


def test_a_contender_that_fails_is_reported_not_raised(tiny: ModelSpec) -> None:
    class Broken(contenders.Contender):
        def compile(self, path: str, hint: str) -> None:
            raise RuntimeError("first line\n-- Conversion is failed for: Conv-16")

    rows = compare.measure_model(tiny, tiny.build(""), [Broken("broken f32", "broken", "f32")], 0.01, 1, 1, False)
    assert rows[0].error == "RuntimeError: -- Conversion is failed for: Conv-16"
    assert "failed: RuntimeError" in compare.table(rows)


def test_latency_turn_feeds_the_state_back() -> None:
    def step(feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        return [feed["x"], feed["state"] + 1]

    times = compare.latency_turn(step, compare.Steps({"x": np.zeros(1), "state": np.zeros(2)}, {1: "state"}), 0.0)
    assert len(times) == 1  # a turn runs at least once
    seen: list[float] = []
    steps = compare.Steps({"x": np.zeros(1), "state": np.zeros(2)}, {1: "state"})
    compare.latency_turn(lambda f: seen.append(f["state"][0]) or step(f), steps, seconds=0.02)
    assert seen[:3] == [0, 1, 2]
    done = len(seen)
    compare.latency_turn(lambda f: seen.append(f["state"][0]) or step(f), steps, seconds=0.0)
    assert seen[done] == done  # the next turn continues the state


def test_steps_restart_every_cycle() -> None:
    steps = compare.Steps({"state": np.zeros(1)}, {0: "state"}, cycle=3)
    seen = []
    for _ in range(7):
        seen.append(float(steps.feed["state"][0]))
        steps.after([steps.feed["state"] + 1])
    assert seen == [0, 1, 2, 0, 1, 2, 0]


def test_quick_cli_writes_the_table_and_json(tiny: ModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(compare.MODELS, "tiny", tiny)
    out = tmp_path / "out.json"
    assert compare.main(["--quick", "--models", "tiny", "--runtimes", "vinerun", "--json", str(out)]) == 0
    assert "| tiny | vinerun f32 |" in capsys.readouterr().out
    saved = json.loads(out.read_text())
    assert saved["rows"][0]["latency_ms"] > 0 and "loadavg" in saved["machine"]


def test_memory_child_reports_rss_growth(tiny: ModelSpec) -> None:
    peak, growth = compare.memory_in_child("vinerun f32", tiny.inputs(), tiny.build(""))
    assert peak is not None and growth is not None
    assert 0 < growth < peak  # compiling allocates; the interpreter and imports came first


def _row(model: str, contender: str, latency: float, fps: float, relative: float = 0.0) -> compare.Row:
    return compare.Row(model, contender, compile_ms=100.0, latency_ms=latency, fps=fps, max_abs_diff=relative,
                       reference="openvino f32", relative_diff=relative)


def test_zoo_summary_gives_ratios_geometric_means_worst_and_agreement() -> None:
    rows = [_row("a", "vinerun f32", 2.0, 50.0, 1e-6), _row("a", "openvino f32", 1.0, 100.0),
            _row("b", "vinerun f32", 1.0, 100.0, 0.5), _row("b", "openvino f32", 2.0, 100.0)]
    text = compare.zoo_summary(rows)
    a_line = next(line for line in text.splitlines() if line.startswith("| a |"))
    assert "| 2.00 | — | 0.50 |" in a_line and "yes (1.0e-06)" in a_line
    assert "NO (5.0e-01)" in text  # b's f32 output is off by half its range
    geomean = next(line for line in text.splitlines() if "geometric mean" in line)
    assert "| 1.00 |" in geomean  # sqrt(2.0 * 0.5)
    worst = next(line for line in text.splitlines() if "worst" in line)
    assert "2.00 (a)" in worst and "0.50 (a)" in worst  # latency: highest; FPS: lowest


def test_readme_section_is_replaced_between_the_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\nintro\n")
    compare.write_readme_section("first", str(readme))
    compare.write_readme_section("second", str(readme))
    text = readme.read_text()
    assert text.startswith("# Benchmarks\n\nintro\n") and "second" in text and "first" not in text
    assert text.count(compare.ZOO_BEGIN) == text.count(compare.ZOO_END) == 1


def test_relative_diff_scales_each_output_and_flags_shape_changes() -> None:
    ref = [np.array([10.0, -20.0]), np.array([0.1])]
    assert compare.relative_diff([np.array([10.0, -19.0]), np.array([0.1])], ref) == pytest.approx(0.05)
    assert compare.relative_diff([np.array([10.0, -20.0]), np.array([0.2])], ref) == pytest.approx(1.0)
    assert compare.relative_diff([np.array([10.0]), np.array([0.1])], ref) == float("inf")
