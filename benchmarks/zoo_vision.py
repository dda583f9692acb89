"""Vision models for ``compare.py``: architectures from PyPI libraries (torchvision, timm) built with random
weights (``torch.manual_seed(0)``, no weights downloaded) and exported by ``torch.onnx.export`` (TorchScript
exporter, opset 17) as a user would, each cached as an ONNX file in the benchmark folder.

``VISION_MODELS`` (batch 1, inputs from ``np.random.default_rng(1)``):

- ``mobilenetv3-tv``: torchvision ``mobilenet_v3_large``, 224 (squeeze-excite, hard-swish / hard-sigmoid)
- ``efficientnet-b0-tv``: torchvision ``efficientnet_b0``, 224 (squeeze-excite, SiLU)
- ``tf-efficientnet-b0-timm``: timm ``tf_efficientnet_b0``, 224 (TensorFlow "SAME" padding: explicit ``Pad``
  before the strided convolutions, as Keras-converted models have)
- ``convnext-tiny-tv``: torchvision ``convnext_tiny``, 224 (7x7 depthwise, LayerNorm over channels between NHWC
  permutes, GELU)
- ``shufflenetv2-tv``: torchvision ``shufflenet_v2_x1_0``, 224 (channel shuffle: Reshape / Transpose / Reshape,
  channel Split and Concat)
- ``densenet121-tv``: torchvision ``densenet121``, 224 (dense blocks: a Concat per layer, pre-activation BN+ReLU)
- ``vit-small-timm``: timm ``vit_small_patch16_224`` (patch-embedding convolution, 12 encoder layers of
  LayerNorm / attention / GELU MLP over 197 tokens)
- ``ssdlite-tv``: torchvision ``ssdlite320_mobilenet_v3_large``, one 3x320x320 image in [0, 1], the whole
  detector as torchvision exports it: normalization and a bilinear ``Resize``, the MobileNetV3 backbone and
  SSDLite heads, box decoding, per-class score threshold and TopK, ``NonMaxSuppression`` (in an ``If`` on the
  box count), ``Gather``s of data-dependent length (outputs ``boxes`` / ``scores`` / ``labels``, 300 detections).
  ``topk_candidates=20`` (torchvision's default 300): random weights put every one of the 90 classes' scores over
  the 0.001 threshold, so the default sends 27,000 boxes into the NMS where a trained model on a real image sends
  a few thousand; with 20, 1,800 (vinerun's NMS took 13 s a call on the 27,000, openvino's whole model 60 ms)
- ``lraspp-tv``: torchvision ``lraspp_mobilenet_v3_large`` segmentation, 224 (21 classes; a bilinear ``Resize`` of
  the low-resolution branch and of the logits to the input size)
- ``unet``: a classic 4-level U-Net written here (two 3x3 conv + BN + ReLU per level, max-pool down, 2x2
  stride-2 ``ConvTranspose`` up, skip Concat), 256x256, widths 32..512

torchvision's PyPI wheel for Linux is a CUDA build; next to a CPU-only torch its C++ ops (``_C.so``) cannot load
(it needs ``libc10_cuda.so``) and ``import torchvision`` 0.28 then fails registering a fake kernel for the missing
``torchvision::nms``. :func:`torchvision_module` defines that op in Python first (a CPU kernel, whose ONNX export is
torchvision's own ``NonMaxSuppression`` symbolic), so the models build either way.

>>> sorted(VISION_MODELS)[:3]
['convnext-tiny-tv', 'densenet121-tv', 'efficientnet-b0-tv']
>>> VISION_MODELS["ssdlite-tv"].inputs()["images"].shape
(3, 320, 320)
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
from zoo_spec import ModelSpec

OPSET = 17
_nms_library: Any = None  # the torch.library fragment that defines torchvision::nms where torchvision's _C cannot load


def _nms_cpu(boxes: Any, scores: Any, iou_threshold: float) -> Any:
    """torchvision's ``nms`` (greedy, highest score first, drops boxes of IoU > ``iou_threshold`` with a kept
    one) in numpy: the kept indices, by decreasing score."""
    import torch

    b, s = boxes.detach().cpu().double().numpy(), scores.detach().cpu().double().numpy()
    order = np.argsort(-s, kind="stable")
    x1, y1, x2, y2 = (b[order, i] for i in range(4))
    area = (x2 - x1) * (y2 - y1)
    alive = np.ones(len(order), bool)
    keep = []
    for i in range(len(order)):
        if not alive[i]:
            continue
        keep.append(order[i])
        rest = np.flatnonzero(alive[i + 1:]) + i + 1
        w = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        h = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = w * h
        alive[rest[inter / (area[i] + area[rest] - inter) > iou_threshold]] = False
    return torch.as_tensor(np.array(keep, np.int64), device=boxes.device)


def _has_ops() -> bool:  # a plain function: torchvision scripts ops.nms, and with it this, when tracing
    return True


def torchvision_module() -> ModuleType:
    """``import torchvision``, first defining ``torchvision::nms`` (and the ``qnms`` schema torchvision 0.28
    registers a fake kernel for) in Python when torchvision's C++ extension cannot load next to this torch."""
    global _nms_library
    if "torchvision" not in sys.modules and _nms_library is None:
        import torch

        spec = importlib.util.find_spec("torchvision")
        if spec is None:
            raise RuntimeError("install the PyPI package 'torchvision'")
        extensions = glob.glob(os.path.join(spec.submodule_search_locations[0], "_C.*"))
        try:
            for path in extensions:
                torch.ops.load_library(path)
        except OSError:
            extensions = []
        if not extensions:
            _nms_library = torch.library.Library("torchvision", "FRAGMENT")
            for op in ("nms", "qnms"):
                _nms_library.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            _nms_library.impl("nms", _nms_cpu, "CPU")
    import torchvision

    if _nms_library is not None:
        torchvision.extension._has_ops = _has_ops  # ops.nms asserts the C++ ops; ours stands in for it
    return torchvision


def importable_torchvision() -> None:
    """Where torchvision is installed, make its import work (:func:`torchvision_module`): ``transformers`` and
    ``timm`` import it."""
    if importlib.util.find_spec("torchvision") is not None:
        torchvision_module()


def _timm(name: str) -> Callable[[], Any]:
    def make() -> Any:
        torchvision_module()
        import timm

        return timm.create_model(name, pretrained=False)
    return make


def _tv_model(name: str, **kwargs: Any) -> Callable[[], Any]:
    def make() -> Any:
        return getattr(torchvision_module().models, name)(weights=None, **kwargs)
    return make


def _tv_detection(name: str, **kwargs: Any) -> Callable[[], Any]:
    def make() -> Any:
        return getattr(torchvision_module().models.detection, name)(weights=None, weights_backbone=None, **kwargs)
    return make


def _tv_segmentation(name: str) -> Callable[[], Any]:
    """A torchvision segmentation model whose forward returns its ``"out"`` logits (not the dict)."""
    def make() -> Any:
        import torch

        net = getattr(torchvision_module().models.segmentation, name)(weights=None, weights_backbone=None)

        class Logits(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.net = net

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.net(x)["out"]
        return Logits()
    return make


def unet(widths: tuple[int, ...] = (32, 64, 128, 256, 512), classes: int = 2) -> Any:
    """A classic U-Net (Ronneberger et al.): per level two 3x3 convolutions (padding 1) + BatchNorm + ReLU,
    2x2 max-pool down; up by a 2x2 stride-2 ``ConvTranspose2d`` halving the channels, Concat with the skip,
    two 3x3 convolutions; a 1x1 classifier. ``widths``: the 4 levels and the bottleneck.

    >>> import torch
    >>> unet((4, 8, 8, 8, 8))(torch.zeros(1, 3, 32, 32)).shape
    torch.Size([1, 2, 32, 32])
    """
    import torch
    from torch import nn

    def double_conv(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True),
                             nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True))

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.down = nn.ModuleList(double_conv(cin, cout)
                                      for cin, cout in zip((3, *widths[:-1]), widths, strict=True))
            self.up = nn.ModuleList(nn.ConvTranspose2d(cin, cout, 2, stride=2)
                                    for cin, cout in zip(widths[:0:-1], widths[-2::-1], strict=True))
            self.merge = nn.ModuleList(double_conv(2 * c, c) for c in widths[-2::-1])
            self.head = nn.Conv2d(widths[0], classes, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            skips = []
            for i, block in enumerate(self.down):
                x = block(x if i == 0 else nn.functional.max_pool2d(x, 2))
                skips.append(x)
            for up, merge, skip in zip(self.up, self.merge, skips[-2::-1], strict=True):
                x = merge(torch.cat([skip, up(x)], 1))
            return self.head(x)
    return UNet()


def calibrate_batchnorm(net: Any, batch: tuple[Any, ...]) -> None:
    """Sets every BatchNorm's running mean and variance to those of its input over ``batch`` (as training would
    leave them) and puts ``net`` in eval mode. Random weights with the fresh statistics (0 and 1) let the
    activations shrink layer by layer: torchvision's mobilenet_v3_large gave logits of 1e-9, nothing a comparison
    or a timing can stand on (denormals); with them every normalized activation is of unit scale."""
    import torch

    norms = [m for m in net.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    net.eval()
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one batch sets them
        m.train()
    with torch.no_grad():
        net(*batch)
    net.eval()


def torch_file(file: str, make: Callable[[], Any], inputs: Callable[[], dict[str, np.ndarray]],
               outputs: list[str], as_list: bool = False, uniform: bool = False) -> Callable[[str], str]:
    """A builder that exports ``make()`` (built after ``torch.manual_seed(0)``, BatchNorm statistics set by
    :func:`calibrate_batchnorm` over 8 random images like the feed's, eval mode) to ``file`` in the folder unless
    it is there, traced on the feed ``inputs()`` (input names its keys, output names ``outputs``).
    ``as_list``: the model takes a list of images (torchvision detection), its one input is that list's image.
    ``uniform``: the calibration images are uniform in [0, 1) (else standard normal)."""
    def build(folder: str) -> str:
        path = os.path.join(folder, file)
        if os.path.exists(path):
            return path
        import torch

        torch.manual_seed(0)
        net = make()
        feed = {name: torch.from_numpy(value) for name, value in inputs().items()}
        image = next(iter(feed.values()))
        shape = (8, *image.shape[-3:])
        batch = torch.rand(shape) if uniform else torch.randn(shape)
        calibrate_batchnorm(net, ([*batch],) if as_list else (batch,))
        args = ([*feed.values()],) if as_list else tuple(feed.values())
        os.makedirs(folder, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(net, args, path + ".part", input_names=list(feed), output_names=outputs,
                              opset_version=OPSET, dynamo=False)
        os.replace(path + ".part", path)
        return path
    return build


def images(size: int = 224) -> Callable[[], dict[str, np.ndarray]]:
    """One standard-normal image (as after per-channel normalization), 1x3xSIZExSIZE, named ``data``."""
    return lambda: {"data": np.random.default_rng(1).standard_normal((1, 3, size, size)).astype(np.float32)}


def detection_image() -> dict[str, np.ndarray]:
    """One 3x320x320 image of values in [0, 1) (torchvision's detectors normalize it themselves)."""
    return {"images": np.random.default_rng(1).random((3, 320, 320)).astype(np.float32)}


def _classifier(name: str, file: str, make: Callable[[], Any], size: int = 224) -> ModelSpec:
    return ModelSpec(name, torch_file(file, make, images(size), ["logits"]), images(size))


VISION_MODELS: dict[str, ModelSpec] = {
    # MobileNetV3-Large: inverted residuals, squeeze-excite (GlobalAveragePool, 1x1 convs, HardSigmoid, Mul),
    # HardSwish activations
    "mobilenetv3-tv": _classifier("mobilenetv3-tv", "mobilenetv3_large_tv.onnx", _tv_model("mobilenet_v3_large")),
    # EfficientNet-B0: MBConv blocks with squeeze-excite (Sigmoid gate) and SiLU (Sigmoid + Mul), 5x5 depthwise
    "efficientnet-b0-tv": _classifier("efficientnet-b0-tv", "efficientnet_b0_tv.onnx", _tv_model("efficientnet_b0")),
    # the TensorFlow port of EfficientNet-B0: "SAME" padding as explicit Pad nodes before the strided convolutions
    "tf-efficientnet-b0-timm": _classifier("tf-efficientnet-b0-timm", "tf_efficientnet_b0_timm.onnx",
                                           _timm("tf_efficientnet_b0")),
    # ConvNeXt-T: 7x7 depthwise, Transpose to NHWC, LayerNormalization over channels, MatMul MLP with GELU,
    # layer scale, Transpose back; LayerNorm over channels in NCHW in the downsampling layers
    "convnext-tiny-tv": _classifier("convnext-tiny-tv", "convnext_tiny_tv.onnx", _tv_model("convnext_tiny")),
    # ShuffleNetV2 1.0x: channel Split, Concat and the channel shuffle (Reshape, Transpose, Reshape)
    "shufflenetv2-tv": _classifier("shufflenetv2-tv", "shufflenet_v2_x1_0_tv.onnx", _tv_model("shufflenet_v2_x1_0")),
    # DenseNet-121: 58 dense layers, each concatenating its 32 new channels onto all the block's earlier ones
    "densenet121-tv": _classifier("densenet121-tv", "densenet121_tv.onnx", _tv_model("densenet121")),
    # ViT-S/16: 16x16 patch convolution, class token Concat, position Add, 12 pre-LN transformer layers (6 heads,
    # width 384, attention as MatMul / Softmax / MatMul), GELU (Erf) MLP
    "vit-small-timm": _classifier("vit-small-timm", "vit_small_patch16_224_timm.onnx", _timm("vit_small_patch16_224")),
    # SSDLite320 + MobileNetV3-Large, the whole detector: normalization, bilinear Resize, backbone and heads,
    # box decoding, score threshold, TopK per class, NonMaxSuppression, data-dependent Gathers
    # (at most 20 candidates per class: 1,800 boxes into the NMS, see the module's docstring)
    "ssdlite-tv": ModelSpec("ssdlite-tv", torch_file(
        "ssdlite320_mobilenet_v3_large_tv.onnx", _tv_detection("ssdlite320_mobilenet_v3_large", topk_candidates=20),
        detection_image, ["boxes", "scores", "labels"], as_list=True, uniform=True), detection_image),
    # LR-ASPP + MobileNetV3-Large segmentation: a squeeze-excite-like attention branch, bilinear Resize of the
    # 1/8-resolution logits to the input size
    "lraspp-tv": ModelSpec("lraspp-tv", torch_file("lraspp_mobilenet_v3_large_tv.onnx",
                                                   _tv_segmentation("lraspp_mobilenet_v3_large"), images(224), ["out"]),
                           images(224)),
    # a classic U-Net (written here): ConvTranspose 2x2/2 upsampling and skip Concats over 4 levels, 256x256
    "unet": ModelSpec("unet", torch_file("unet_tconv.onnx", unet, images(256), ["out"]), images(256)),
}
