"""The int8 models of ``compare.py``: f32 benchmark models quantized the way users quantize them.

``INT8_MODELS`` maps a name to an :class:`Int8Spec` (a :class:`model_zoo.ModelSpec` that also names its f32
source model, whether it is a classifier, and held-out inputs for the accuracy columns):

- ``resnet50-int8`` / ``mobilenetv2-int8``: ``models.py``'s ResNet-50 and ``model_zoo``'s MobileNetV2 (depthwise)
  through onnxruntime's ``quant_pre_process`` (as its documentation tells users to) and ``quantize_static``:
  QDQ format, per-channel s8 weights, u8 activations, MinMax calibration over 32 smooth random images normalized
  as ImageNet's (fixed seed), onnxruntime's default op types.
- ``bert-int8``: the BERT encoder from the transformers package (``model_zoo``'s ``bert-hf-sdpa``: exported by
  ``torch.onnx.export`` with dynamic batch and sequence axes; a user's BERT is an exporter's file), quantized the
  same way but with ``op_types_to_quantize=["MatMul"]`` (all 48: the projections, the FFN and the two attention
  products), calibrated on 32 random token sequences with padding masks. ``quant_pre_process``'s symbolic shape
  inference gives up on the dynamic axes, so it runs with ``skip_symbolic_shape=True`` as its message suggests.
  onnxruntime's default op types are not usable on this export: they also quantize the attention-mask path
  (Where / Add over float-min values) with an infinite scale, and the runtimes then disagree (NaN handling;
  measured max |diff| 1.5 over an output range of 8.4 between onnxruntime and openvino), so users of transformer
  models quantize MatMul only. ``bert-repo-int8`` is the repo's own encoder (``model_zoo``'s ``bert``, no mask)
  with onnxruntime's default op types (MatMul, Gemm, Add, Mul...).
- ``resnet50-nncf`` / ``mobilenetv2-nncf``: the same f32 ONNX files read by openvino and quantized by NNCF
  (openvino backend, ``nncf.quantize`` with its defaults over the same 32 images), saved as IR
  (``ov.save_model``: FakeQuantize nodes, f16-compressed weights).

The files are cached in the folder (a second build finds them).

>>> sorted(INT8_MODELS["resnet50-int8"].inputs())
['data']
>>> INT8_MODELS["resnet50-nncf"].source, INT8_MODELS["bert-int8"].classifier
('resnet50', False)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import onnx
from model_zoo import MODELS, ModelSpec

Feed = dict[str, np.ndarray]
CALIBRATION = 32  # calibration samples
HELD_OUT = 8  # inputs of the accuracy columns (none of them a calibration sample)
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]


@dataclass
class Int8Spec(ModelSpec):
    """A quantized benchmark model: ``source`` is the ``model_zoo.MODELS`` name of the f32 model it was quantized
    from (the "vinerun f32 (f32 model)" row runs that file), ``classifier`` asks for a top-1 agreement column, and
    ``samples()`` gives the held-out feeds of the accuracy columns."""

    source: str = ""
    classifier: bool = True
    samples: Callable[[], list[Feed]] = field(default=lambda: [])


def smooth_image(seed: int, size: int = 224) -> np.ndarray:
    """A [1, 3, size, size] image as a photo's statistics go (smooth regions, edges, a gradient, values in 0..1),
    normalized with ImageNet's mean and std: random 7x7 and 28x28 grids upsampled bilinearly, plus a ramp.

    >>> x = smooth_image(0, 32)
    >>> x.shape, bool(-3 < x.min() < x.max() < 3)
    ((1, 3, 32, 32), True)
    """
    r = np.random.default_rng(seed)
    image = 0.6 * _upsample(r.random((3, 7, 7)), size) + 0.25 * _upsample(r.random((3, 28, 28)), size)
    ramp = np.linspace(0, 1, size, dtype=np.float32)
    image += 0.15 * (ramp[None, :, None] if r.random() < 0.5 else ramp[None, None, :])
    return ((image.astype(np.float32) - IMAGENET_MEAN) / IMAGENET_STD)[None]


def _upsample(grid: np.ndarray, size: int) -> np.ndarray:
    """Bilinear upsampling of [C, h, w] to [C, size, size] (align-corners)."""
    h, w = grid.shape[1:]
    ys, xs = np.linspace(0, h - 1, size), np.linspace(0, w - 1, size)
    y0, x0 = np.minimum(ys.astype(int), h - 2), np.minimum(xs.astype(int), w - 2)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    top = grid[:, y0][:, :, x0] * (1 - fx) + grid[:, y0][:, :, x0 + 1] * fx
    bottom = grid[:, y0 + 1][:, :, x0] * (1 - fx) + grid[:, y0 + 1][:, :, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def image_feeds(first_seed: int, count: int) -> list[Feed]:
    return [{"data": smooth_image(seed)} for seed in range(first_seed, first_seed + count)]


def token_feeds(first_seed: int, count: int, seq: int = 128, vocab: int = 30522) -> list[Feed]:
    """Token sequences of ``seq`` with the last 0..40 positions padding (masked), [CLS] first, [SEP] last."""
    feeds = []
    for seed in range(first_seed, first_seed + count):
        r = np.random.default_rng(seed)
        length = seq - int(r.integers(0, 41))
        ids = np.zeros((1, seq), np.int64)
        ids[0, :length] = r.integers(1000, vocab, length)
        ids[0, 0], ids[0, length - 1] = 101, 102
        mask = np.zeros((1, seq), np.int64)
        mask[0, :length] = 1
        feeds.append({"input_ids": ids, "attention_mask": mask})
    return feeds


def repo_bert_feeds(first_seed: int, count: int) -> list[Feed]:
    """Feeds of the repo's encoder (input ``tokens``: embeddings, [1, 128, 384])."""
    return [{"tokens": np.random.default_rng(seed).standard_normal((1, 128, 384)).astype(np.float32)}
            for seed in range(first_seed, first_seed + count)]


class _Reader:
    """onnxruntime's ``CalibrationDataReader`` protocol (``get_next`` until None) over a list of feeds."""

    def __init__(self, feeds: list[Feed]) -> None:
        self._feeds: Iterator[Feed] = iter(feeds)

    def get_next(self) -> Feed | None:
        return next(self._feeds, None)

    def rewind(self) -> None:  # called by some calibrators; one pass is all MinMax needs
        pass


def ort_qdq(source: str, file: str, feeds: Callable[[int, int], list[Feed]],
            op_types: list[str] | None = None) -> Callable[[str], str]:
    """A builder: the ``source`` model pre-processed and quantized by onnxruntime (QDQ, per-channel s8 weights,
    u8 activations, MinMax over ``CALIBRATION`` feeds of seeds 1000..., ``op_types`` or onnxruntime's default
    op types)."""
    def build(folder: str) -> str:
        path = os.path.join(folder, file)
        if os.path.exists(path):
            return path
        from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
        from onnxruntime.quantization.shape_inference import quant_pre_process

        class Reader(_Reader, CalibrationDataReader):
            pass

        f32 = os.path.abspath(MODELS[source].build(folder))
        prepared = os.path.abspath(os.path.join(folder, f"{os.path.splitext(file)[0]}_pre.onnx"))
        with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):  # its temp files go there
            try:
                quant_pre_process(f32, prepared)
            except Exception:  # noqa: BLE001 - onnxruntime raises a bare Exception
                # symbolic shape inference gives up on the transformers export's dynamic axes ("Incomplete
                # symbolic shape inference"); skipping it, ONNX shape inference and optimization still run
                quant_pre_process(f32, prepared, skip_symbolic_shape=True)
        quantize_static(prepared, path + ".part", Reader(feeds(1000, CALIBRATION)), quant_format=QuantFormat.QDQ,
                        per_channel=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        op_types_to_quantize=op_types)
        os.replace(path + ".part", path)
        os.remove(prepared)
        return path
    return build


def perturbed_feeds(base: Feed, count: int, scale: float, seed: int) -> list[Feed]:
    """``base`` and ``count - 1`` copies of it with Gaussian noise of ``scale`` on its float inputs."""
    rng = np.random.default_rng(seed)
    return [base] + [{k: v + (rng.standard_normal(v.shape) * scale).astype(v.dtype) if v.dtype == np.float32 else v
                      for k, v in base.items()} for _ in range(count - 1)]


def nncf_ir(source: str, file: str, feeds: Callable[[int, int], list[Feed]]) -> Callable[[str], str]:
    """A builder: the ``source`` ONNX file read by openvino, quantized by NNCF (openvino backend, defaults:
    the PERFORMANCE preset, fast bias correction) over ``CALIBRATION`` feeds, saved as IR."""
    def build(folder: str) -> str:
        xml = os.path.join(folder, file)
        if os.path.exists(xml):
            return xml
        import nncf
        import openvino as ov

        model = ov.Core().read_model(MODELS[source].build(folder))
        samples = feeds(1000, CALIBRATION)
        quantized = nncf.quantize(model, nncf.Dataset(samples), subset_size=len(samples))
        ov.save_model(quantized, xml)
        return xml
    return build


def _spec(name: str, build: Callable[[str], str], source: str, feeds: Callable[[int, int], list[Feed]],
          classifier: bool = True) -> Int8Spec:
    # the timed feed is held-out seed 1; the accuracy columns use seeds 1..HELD_OUT
    return Int8Spec(name, build, lambda: feeds(1, 1)[0], bf16=False, source=source, classifier=classifier,
                    samples=lambda: feeds(1, HELD_OUT))


INT8_MODELS: dict[str, Int8Spec] = {
    "resnet50-int8": _spec("resnet50-int8", ort_qdq("resnet50", "resnet50_int8_qdq.onnx", image_feeds), "resnet50",
                           image_feeds),
    "mobilenetv2-int8": _spec("mobilenetv2-int8", ort_qdq("mobilenetv2", "mobilenetv2_int8_qdq.onnx", image_feeds),
                              "mobilenetv2", image_feeds),
    "bert-int8": _spec("bert-int8", ort_qdq("bert-hf-sdpa", "bert_hf_sdpa_int8_qdq.onnx", token_feeds, ["MatMul"]),
                       "bert-hf-sdpa", token_feeds, classifier=False),
    "bert-repo-int8": _spec("bert-repo-int8", ort_qdq("bert", "bert_l6_h384_s128_int8_qdq.onnx", repo_bert_feeds),
                            "bert", repo_bert_feeds, classifier=False),
    "resnet50-nncf": _spec("resnet50-nncf", nncf_ir("resnet50", "resnet50_nncf_int8.xml", image_feeds), "resnet50",
                           image_feeds),
    "mobilenetv2-nncf": _spec("mobilenetv2-nncf", nncf_ir("mobilenetv2", "mobilenetv2_nncf_int8.xml", image_feeds),
                              "mobilenetv2", image_feeds),
}


def output_steps(path: str) -> list[float | None]:
    """Per model output, one quantization step of it where the file quantizes it: the scale of the
    DequantizeLinear that produces it (ONNX; the largest, if per channel) or (high - low) / (levels - 1) of the
    FakeQuantize (IR). ``None`` where the output is not quantized (the caller falls back to the reference output's
    range / 255: one u8 step over it)."""
    if path.endswith(".onnx"):
        model = onnx.load(path, load_external_data=False)
        producers = {out: node for node in model.graph.node for out in node.output}
        inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        steps: list[float | None] = []
        for out in model.graph.output:
            node = producers.get(out.name)
            ok = node is not None and node.op_type == "DequantizeLinear" and node.input[1] in inits
            steps.append(float(np.max(inits[node.input[1]])) if ok else None)
        return steps
    import openvino as ov

    steps = []
    for result in ov.Core().read_model(path).get_results():
        node = result.input_value(0).get_node()
        if node.get_type_name() != "FakeQuantize":
            steps.append(None)
            continue
        low, high = (node.input_value(i).get_node() for i in (3, 4))
        if low.get_type_name() != "Constant" or high.get_type_name() != "Constant":
            steps.append(None)
            continue
        levels = int(node.get_attributes()["levels"])
        steps.append(float(np.max(high.get_data() - low.get_data())) / (levels - 1))
    return steps


@dataclass
class Agreement:
    """One contender's outputs against the reference's over the held-out samples: the largest |difference|,
    the same in output quantization steps (see :func:`output_steps`), and top-1 agreement ("7/8")."""

    max_abs_diff: float
    steps: float
    top1: str | None


def agreement(spec: Int8Spec, path: str, runs: dict[str, Callable[[Feed], list[np.ndarray]]],
              reference: str) -> dict[str, Agreement]:
    """Every contender of ``runs`` against ``runs[reference]`` on ``spec.samples()`` (one call each; a
    stateless model)."""
    samples = spec.samples()
    outputs = {name: [[np.array(o, np.float64, copy=True) for o in run(dict(feed))] for feed in samples]
               for name, run in runs.items()}
    ref = outputs[reference]
    steps = [s if s is not None else max(float(np.ptp(np.concatenate([o[i].ravel() for o in ref]))) / 255, 1e-12)
             for i, s in enumerate(output_steps(path))]
    result = {}
    for name, outs in outputs.items():
        diffs = [[float(np.max(np.abs(a - b))) for a, b in zip(out, r, strict=True)]
                 for out, r in zip(outs, ref, strict=True)]
        top1 = None
        if spec.classifier:
            same = sum(int(np.argmax(out[0]) == np.argmax(r[0])) for out, r in zip(outs, ref, strict=True))
            top1 = f"{same}/{len(samples)}"
        result[name] = Agreement(max(max(d) for d in diffs),
                                 max(d[i] / steps[i] for d in diffs for i in range(len(steps))), top1)
    return result
