"""silero-vad on the GNA device: what blocks it, and its LSTM + decoder run bit-exactly.

Writes, into ``--out`` (default /tmp/gna_silero):

- ``tail.xml``: :func:`vinerun.models.speech.silero_vad_tail` — silero's LSTM (state in ReadValue/Assign)
  and decoder with its own weights, the part GNA_SW_EXACT covers;
- ``lstm_in.ark``: one utterance, the encoder output (the LSTM input) for every 32 ms chunk of
  synthetic speech-like audio, computed by the full model on CPU;
- ``silero_prob.ark``: the full model's speech probabilities for the same chunks (the reference);

and prints the coverage report of the full model (which layers the device refuses, which the exact
path does not cover yet). Then:

    python benchmarks/gna_silero.py
    cd /tmp/gna_silero && vinerun speech -m tail.xml -i lstm_in.ark -r silero_prob.ark -compare
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import vinerun as ov
from vinerun.models.speech import silero_vad_tail
from vinerun.plugins.gna.coverage import coverage
from vinerun.tools.speech_io import write_ark

CHUNK, CONTEXT, SR = 512, 64, 16000


def speech_like_audio(seconds: float, seed: int = 0) -> np.ndarray:
    """Tones with a syllable-like envelope between stretches of quiet noise (16 kHz)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    voiced = (np.sin(2 * np.pi * 2.5 * t) > 0.2).astype(np.float32)
    tone = 0.4 * np.sin(2 * np.pi * 180 * t) + 0.2 * np.sin(2 * np.pi * 360 * t + 1) + 0.1 * np.sin(2 * np.pi * 720 * t)
    envelope = voiced * (0.6 + 0.4 * np.sin(2 * np.pi * 6 * t) ** 2)
    return (tone * envelope + 0.01 * rng.standard_normal(t.shape)).astype(np.float32)


def encoder_features(model: ov.Model, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run the full silero model on CPU chunk by chunk: (LSTM inputs [chunks, 128], probabilities [chunks, 1])."""
    lstm = next(n for n in model.get_ordered_ops() if n.type_name == "LSTMSequence")
    model.add_outputs([lstm.input_value(0)])
    request = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}).create_infer_request()
    state, ctx = np.zeros((2, 1, 128), np.float32), np.zeros((1, CONTEXT), np.float32)
    feats, probs = [], []
    for i in range(len(audio) // CHUNK):
        x = np.concatenate([ctx, audio[None, i * CHUNK:(i + 1) * CHUNK]], axis=1)
        result = request.infer([x, state])
        probs.append(np.asarray(result[0]).reshape(1))
        state = np.asarray(result[1])
        feats.append(np.asarray(result[2]).reshape(-1))
        ctx = x[:, -CONTEXT:]
    return np.array(feats, np.float32), np.array(probs, np.float32)


def main() -> int:
    import silero_vad

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="/tmp/gna_silero")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--file", default="silero_vad_openvino_16k.onnx", help="a file of the silero-vad package")
    args = p.parse_args()
    path = Path(silero_vad.__file__).parent / "data" / args.file
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    core = ov.Core()
    print(f"{args.file}:")
    print("\n".join(coverage(core.read_model(path)).lines()))
    ov.save_model(silero_vad_tail(core.read_model(path)), str(out / "tail.xml"), compress_to_fp16=False)
    feats, probs = encoder_features(core.read_model(path), speech_like_audio(args.seconds))
    write_ark(out / "lstm_in.ark", {"audio0": feats})
    write_ark(out / "silero_prob.ark", {"audio0": probs})
    print(f"wrote {out}/tail.xml, lstm_in.ark ({len(feats)} chunks), silero_prob.ark")
    return 0


if __name__ == "__main__":
    sys.exit(main())
