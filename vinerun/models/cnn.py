"""A small ResNet-style CNN: conv+bias+relu stem, max pool, two residual blocks (the second
strided, with a 1x1 projection), global average pool and a fully connected classifier.

``cnn_model()`` builds it with the opset API; ``cnn_onnx()`` builds the same network (same
weights) as ONNX, so openvino and onnxruntime can run it side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx

from vinerun import opset13 as ops
from vinerun.ir.model import Model
from vinerun.ir.node import Output
from vinerun.models._common import OnnxGraph, he, rng, small


@dataclass
class CNNWeights:
    """Convolutions as (name, weight [O,I,k,k], bias [O], stride, pad); then the classifier."""

    convs: dict[str, tuple[np.ndarray, np.ndarray, int, int]] = field(default_factory=dict)
    fc_w: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    fc_b: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))


def cnn_weights(channels: int = 3, width: int = 16, num_classes: int = 10, seed: int = 0) -> CNNWeights:
    r = rng(seed)
    w = CNNWeights()

    def conv(name: str, cin: int, cout: int, k: int, stride: int = 1) -> None:
        w.convs[name] = (he(r, (cout, cin, k, k), cin * k * k), small(r, (cout,)), stride, k // 2)

    conv("stem", channels, width, 3)
    conv("b1_c1", width, width, 3)
    conv("b1_c2", width, width, 3)
    conv("b2_c1", width, 2 * width, 3, stride=2)
    conv("b2_c2", 2 * width, 2 * width, 3)
    conv("b2_proj", width, 2 * width, 1, stride=2)
    w.fc_w = he(r, (2 * width, num_classes), 2 * width)
    w.fc_b = small(r, (num_classes,))
    return w


def _conv(x: Output, w: CNNWeights, name: str, relu: bool = True) -> Output:
    weight, bias, stride, pad = w.convs[name]
    y = ops.convolution(x, ops.constant(weight, name=f"{name}.weight"), [stride, stride], [pad, pad], [pad, pad],
                        [1, 1], name=name)
    y = ops.add(y, ops.constant(bias.reshape(1, -1, 1, 1), name=f"{name}.bias"), name=f"{name}.add")
    return ops.relu(y, name=f"{name}.relu").output(0) if relu else y.output(0)


def cnn_model(batch: int = 1, image: int = 32, channels: int = 3, width: int = 16, num_classes: int = 10,
              seed: int = 0) -> Model:
    """The CNN as a vinerun Model: input ``image`` [batch, channels, image, image] -> ``logits``."""
    w = cnn_weights(channels, width, num_classes, seed)
    x = ops.parameter([batch, channels, image, image], name="image")
    y = _conv(x.output(0), w, "stem")
    y = ops.max_pool(y, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], name="pool").output(0)
    skip = y
    y = _conv(_conv(y, w, "b1_c1"), w, "b1_c2", relu=False)
    y = ops.relu(ops.add(y, skip, name="b1.add"), name="b1.relu").output(0)
    skip = _conv(y, w, "b2_proj", relu=False)
    y = _conv(_conv(y, w, "b2_c1"), w, "b2_c2", relu=False)
    y = ops.relu(ops.add(y, skip, name="b2.add"), name="b2.relu").output(0)
    y = ops.reduce_mean(y, ops.constant(np.array([2, 3], np.int64)), False, name="gap")
    y = ops.matmul(y, ops.constant(w.fc_w, name="fc.weight"), False, False, name="fc")
    logits = ops.add(y, ops.constant(w.fc_b, name="fc.bias"), name="logits")
    logits.output(0).set_names({"logits"})
    return Model([logits], [x], "cnn")


def cnn_onnx(batch: int = 1, image: int = 32, channels: int = 3, width: int = 16, num_classes: int = 10,
             seed: int = 0) -> onnx.ModelProto:
    """The same network as ONNX (opset 17)."""
    w = cnn_weights(channels, width, num_classes, seed)
    g = OnnxGraph()

    def conv(x: str, name: str, relu: bool = True) -> str:
        weight, bias, stride, pad = w.convs[name]
        y = g.op("Conv", x, g.const(weight, name), g.const(bias, name + "_b"), strides=[stride, stride],
                 pads=[pad] * 4)
        return g.op("Relu", y) if relu else y

    y = g.op("MaxPool", conv("image", "stem"), kernel_shape=[2, 2], strides=[2, 2])
    b1 = conv(conv(y, "b1_c1"), "b1_c2", relu=False)
    y = g.op("Relu", g.op("Add", b1, y))
    skip = conv(y, "b2_proj", relu=False)
    b2 = conv(conv(y, "b2_c1"), "b2_c2", relu=False)
    y = g.op("Relu", g.op("Add", b2, skip))
    y = g.op("ReduceMean", y, axes=[2, 3], keepdims=0)
    y = g.op("Add", g.op("MatMul", y, g.const(w.fc_w, "fc_w")), g.const(w.fc_b, "fc_b"))
    return g.model("cnn", [("image", [batch, channels, image, image])], [("logits", y, [batch, num_classes])])


def cnn_inputs(batch: int = 1, image: int = 32, channels: int = 3, seed: int = 1) -> dict[str, np.ndarray]:
    return {"image": rng(seed).standard_normal((batch, channels, image, image)).astype(np.float32)}
