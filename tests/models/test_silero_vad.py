"""silero-vad, a real speech model shipped on PyPI: vinerun matches onnxruntime step by step.

The models carry their LSTM state through inputs/outputs; `silero_vad.onnx` also branches on the
sample rate with `If` subgraphs and has a dynamic batch in its state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vinerun as ov

silero_vad = pytest.importorskip("silero_vad")
ort = pytest.importorskip("onnxruntime")

DATA = Path(silero_vad.__file__).parent / "data"


def synthetic_audio(seconds: float, sr: int, seed: int = 0) -> np.ndarray:
    """Tones with a syllable-like envelope between stretches of quiet noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * sr)) / sr
    voiced = (np.sin(2 * np.pi * 2.5 * t) > 0.2).astype(np.float32)
    tone = 0.4 * np.sin(2 * np.pi * 180 * t) + 0.2 * np.sin(2 * np.pi * 360 * t + 1) + 0.1 * np.sin(2 * np.pi * 720 * t)
    envelope = voiced * (0.6 + 0.4 * np.sin(2 * np.pi * 6 * t) ** 2)
    return (tone * envelope + 0.01 * rng.standard_normal(t.shape)).astype(np.float32)


def _sessions(name: str):
    path = DATA / name
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})  # exact vs ORT
    return session, compiled.create_infer_request()


def _stream(name: str, sr: int, with_sr_input: bool, steps: int, atol: float) -> list[float]:
    session, request = _sessions(name)
    chunk, context = (512, 64) if sr == 16000 else (256, 32)
    audio = synthetic_audio(steps * chunk / sr, sr)
    state_ref = state_vr = np.zeros((2, 1, 128), np.float32)
    ctx = np.zeros((1, context), np.float32)
    probs = []
    for i in range(steps):
        x = np.concatenate([ctx, audio[None, i * chunk:(i + 1) * chunk]], axis=1)
        feed = {"input": x, "state": state_ref}
        if with_sr_input:
            feed["sr"] = np.array(sr, np.int64)
        out_ref, state_ref = session.run(None, feed)
        result = request.infer({**feed, "state": state_vr})
        out_vr, state_vr = result["output"], result["stateN"]
        np.testing.assert_allclose(out_vr, out_ref, atol=atol, err_msg=f"step {i}: speech probability")
        np.testing.assert_allclose(state_vr, state_ref, atol=atol, err_msg=f"step {i}: state")
        ctx = x[:, -context:]
        probs.append(float(out_ref.reshape(-1)[0]))
    return probs


@pytest.mark.parametrize("sr", [16000, 8000])
def test_silero_vad_with_if_branches_streams_like_onnxruntime(sr):
    probs = _stream("silero_vad.onnx", sr, with_sr_input=True, steps=24, atol=1e-4)
    assert max(probs) - min(probs) > 0.05, "the synthetic stream should move the speech probability"


def test_silero_vad_op15_16k():
    _stream("silero_vad_16k_op15.onnx", 16000, with_sr_input=True, steps=16, atol=1e-4)


def test_silero_vad_ifless_op18():
    _stream("silero_vad_op18_ifless.onnx", 16000, with_sr_input=True, steps=16, atol=1e-4)


def test_silero_vad_half_precision_weights():
    _stream("silero_vad_half.onnx", 16000, with_sr_input=False, steps=8, atol=2e-3)


def test_silero_vad_sequence_model_matches_in_one_call():
    session, request = _sessions("silero_vad_16k_sequence.onnx")
    audio = synthetic_audio(0.64, 16000)
    frames = np.stack([np.concatenate([np.zeros(64, np.float32), audio[:512]])]
                      + [audio[i * 512 - 64:(i + 1) * 512] for i in range(1, 20)])
    h = c = np.zeros((1, 1, 128), np.float32)
    ref = session.run(None, {"input": frames, "h": h, "c": c})
    got = request.infer({"input": frames, "h": h, "c": c}).to_tuple()
    for r, g in zip(ref, got, strict=True):
        np.testing.assert_allclose(g, r, atol=1e-4)
