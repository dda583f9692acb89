"""Benchmark models built in code, deterministic, never downloaded.

``resnet50_onnx()`` is the full ResNet-50 v1.5 topology (torchvision's: a 7x7/2 stem, max pool,
bottleneck stages of 3, 4, 6 and 3 blocks with the stride on the 3x3 convolution, projection
shortcuts, global average pool and a 1000-way classifier) with seeded random weights. BatchNorm is
folded into the convolutions' biases, as every runtime does at compile time, so the graph is the
one the devices execute: 53 convolutions, 16 residual adds, 49 ReLUs.

    python benchmarks/models.py resnet50 -o /tmp/bench/resnet50.onnx

>>> proto = resnet50_onnx(image=32, num_classes=10)
>>> sum(n.op_type == "Conv" for n in proto.graph.node)
53
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import onnx

from vinerun.models._common import OnnxGraph, he, rng, small

STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # (width, blocks, stride of the first block)
EXPANSION = 4


def resnet50_onnx(batch: int = 1, image: int = 224, num_classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """ResNet-50 as ONNX (opset 17): input ``data`` [batch, 3, image, image] -> ``logits``."""
    r = rng(seed)
    g = OnnxGraph()

    def conv(x: str, cin: int, cout: int, k: int, stride: int = 1, relu: bool = True, gain: float = 1.0) -> str:
        weight = he(r, (cout, cin, k, k), cin * k * k) * np.float32(gain)
        y = g.op("Conv", x, g.const(weight, "w"), g.const(small(r, (cout,), 0.01), "b"),
                 kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
        return g.op("Relu", y) if relu else y

    y = conv("data", 3, 64, 7, stride=2)
    y = g.op("MaxPool", y, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for width, blocks, stride in STAGES:
        for i in range(blocks):
            s = stride if i == 0 else 1
            cout = width * EXPANSION
            skip = conv(y, cin, cout, 1, s, relu=False) if i == 0 else y
            b = conv(y, cin, width, 1)
            b = conv(b, width, width, 3, s)
            # a small gain on the last conv of the branch keeps activations bounded over 16 blocks
            b = conv(b, width, cout, 1, relu=False, gain=0.2)
            y = g.op("Relu", g.op("Add", b, skip))
            cin = cout
    y = g.op("Flatten", g.op("GlobalAveragePool", y), axis=1)
    y = g.op("Gemm", y, g.const(he(r, (num_classes, cin), cin), "fc_w"), g.const(small(r, (num_classes,)), "fc_b"),
             transB=1)
    return g.model("resnet50", [("data", [batch, 3, image, image])], [("logits", y, [batch, num_classes])])


def save_resnet50(path: str, **kwargs: int) -> str:
    """Build and save ResNet-50 to ``path`` (creating its folder); returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    onnx.save(resnet50_onnx(**kwargs), path)
    return path


BUILDERS = {"resnet50": save_resnet50}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Build a benchmark model (deterministic, seeded weights) as ONNX.")
    p.add_argument("model", choices=sorted(BUILDERS))
    p.add_argument("-o", "--output", required=True, help="where to write the .onnx file")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    path = BUILDERS[args.model](args.output, batch=args.batch, image=args.image, seed=args.seed)
    print(f"{args.model}: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
