"""Smoke test of the int8 rows of benchmarks/compare.py (benchmarks/int8_models.py, int8_profile.py) on a tiny CNN
quantized by onnxruntime: the contenders, the accuracy columns, the int8 table and the profile helper run end to end
(no timed assertions: only that figures come out)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from vinerun.models import build_onnx

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import compare  # noqa: E402
import contenders  # noqa: E402
import int8_models  # noqa: E402
import int8_profile  # noqa: E402


def _feeds(first: int, count: int) -> list[dict[str, np.ndarray]]:
    return [{"image": int8_models.smooth_image(seed, 16)} for seed in range(first, first + count)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[int8_models.Int8Spec, str, str]:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    folder = tmp_path_factory.mktemp("int8")
    f32, quantized = str(folder / "cnn.onnx"), str(folder / "cnn_int8.onnx")
    onnx.save(build_onnx("cnn", image=16), f32)
    quantize_static(f32, quantized, int8_models._Reader(_feeds(100, 8)), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    spec = int8_models.Int8Spec("tiny-int8", lambda folder: quantized, lambda: _feeds(1, 1)[0], bf16=False,
                                source="tiny", samples=lambda: _feeds(1, 3))
    return spec, f32, quantized


def test_smooth_images_are_normalized_and_seeded() -> None:
    a, b = int8_models.smooth_image(3, 32), int8_models.smooth_image(3, 32)
    assert a.shape == (1, 3, 32, 32) and a.dtype == np.float32 and np.array_equal(a, b)
    assert -2.5 < a.min() < a.max() < 2.7  # ImageNet normalization of values in 0..1


def test_output_steps_reads_the_output_dequantizer(tiny: tuple[int8_models.Int8Spec, str, str]) -> None:
    _, f32, quantized = tiny
    assert int8_models.output_steps(f32) == [None]
    (step,) = int8_models.output_steps(quantized)
    assert step is None or step > 0


def test_int8_rows_give_every_figure_and_their_own_table(tiny: tuple[int8_models.Int8Spec, str, str]) -> None:
    spec, f32, quantized = tiny
    chosen = contenders.int8_contenders(f32, quantized, ("vinerun", "onnxruntime"))
    assert [c.name for c in chosen] == ["vinerun int8", "onnxruntime int8", "vinerun f32 (f32 model)"]
    rows = compare.measure_model(spec, quantized, chosen, seconds=0.02, rounds=1, compile_reps=1, memory=False)
    by_name = {r.contender: r for r in rows}
    ours = by_name["vinerun int8"]
    assert ours.error is None and ours.int8 and ours.latency_ms > 0 and ours.fps > 0
    assert ours.reference == "onnxruntime int8" and ours.top1 is not None and ours.top1.endswith("/3")
    assert ours.output_steps is not None and ours.max_abs_diff is not None
    text = compare.table(rows)
    assert "| tiny-int8 | vinerun int8 |" in text and "vinerun int8 / vinerun f32 (f32 model)" in text
    assert "max abs diff vs openvino int8" in text and "max abs diff vs openvino f32" not in text


def test_profile_helper_lists_every_conv_and_matmul(tiny: tuple[int8_models.Int8Spec, str, str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    spec, _, quantized = tiny
    nodes, rows = int8_profile.profile(quantized, spec.inputs())
    assert len(nodes) == 7 and all(q for _, _, q in nodes)  # 6 Conv + 1 MatMul, all quantized
    int8_profile.report(nodes, rows, verbose=True)
    out = capsys.readouterr().out
    assert "model: 7 conv/matmul nodes, 7 quantized" in out and "verdict:" in out
