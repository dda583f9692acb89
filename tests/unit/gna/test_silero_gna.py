"""silero-vad on GNA: the layers that block it are reported by name, and its LSTM + decoder (with silero's
weights) run on GNA: GNA_SW_FP32 reproduces silero's probabilities, GNA_SW_EXACT stays close."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import vinerun as ov
from vinerun import opset13 as ops
from vinerun.errors import ValidationError
from vinerun.models.speech import silero_vad_tail
from vinerun.plugins.gna.coverage import coverage
from vinerun.plugins.gna.limits import GNALimitError

silero_vad = pytest.importorskip("silero_vad")
PATH = Path(silero_vad.__file__).parent / "data" / "silero_vad_openvino_16k.onnx"
sys.path.insert(0, str(Path(__file__).parents[3] / "benchmarks"))
from gna_silero import encoder_features, speech_like_audio  # noqa: E402


@pytest.fixture(scope="module")
def chunks() -> tuple[np.ndarray, np.ndarray]:
    return encoder_features(ov.Core().read_model(PATH), speech_like_audio(0.8))   # 25 chunks of 32 ms


def test_blocking_layers_are_named() -> None:
    report = coverage(ov.Core().read_model(PATH))
    assert {"Pad", "Sqrt", "ReduceMean"} <= set(report.device_blockers)        # never GNA layers
    assert {"Convolution", "Power", "Slice", "Transpose"} <= set(report.exact_blockers)
    assert "LSTMSequence" not in report.device_blockers | report.exact_blockers
    with pytest.raises(GNALimitError, match=r"stft/padding/Pad \(type Pad\)"):   # the first layer it meets
        ov.Core().compile_model(str(PATH), "GNA", {"GNA_DEVICE_MODE": "GNA_SW_FP32"})


def test_tail_runs_on_gna_fp32_like_silero_and_exact_close(chunks: tuple[np.ndarray, np.ndarray]) -> None:
    feats, probs = chunks
    tail = silero_vad_tail(ov.Core().read_model(PATH))
    assert coverage(tail).runs_exact

    def run(config: dict) -> np.ndarray:
        request = ov.Core().compile_model(tail, "GNA", config).create_infer_request()
        return np.array([np.asarray(request.infer([f[None]])[0]).reshape(1) for f in feats])

    fp32 = run({"GNA_DEVICE_MODE": "GNA_SW_FP32"})
    np.testing.assert_allclose(fp32, probs, atol=1e-5)          # the tail is silero's own LSTM and decoder
    sf = {"GNA_SCALE_FACTOR_PER_INPUT": {"lstm_in": 16384 / float(np.abs(feats[0]).max())}}
    for precision in ("i16", "i8"):
        err = np.abs(run({**sf, "INFERENCE_PRECISION_HINT": precision}) - fp32)
        assert 0 < err.max() < 0.08 and err.mean() < 0.02, precision   # measured (125 chunks) max 0.039, avg 0.006


def test_not_a_silero_model_is_refused() -> None:
    x = ops.parameter([1, 4], name="x")
    with pytest.raises(ValidationError, match="expected one LSTMSequence"):
        silero_vad_tail(ov.Model([ops.relu(x)], [x], "plain"))
