"""Small ONNX QDQ models (as onnxruntime's quantizer writes them) for the low-precision tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class QdqGraph:
    """Builds a QDQ graph node by node: activations quantized per tensor, weights per output channel (s8)."""

    def __init__(self, seed: int = 0):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def const(self, value: np.ndarray, prefix: str = "c") -> str:
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], name: str | None = None, **attrs) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=name or out, **attrs))
        return out

    def qdq(self, x: str, scale: float, zero_point: int, dtype=np.uint8) -> str:
        """Quantize then dequantize ``x`` (per tensor)."""
        s, z = self.const(np.float32(scale), "scale"), self.const(np.asarray(zero_point, dtype), "zp")
        return self.node("DequantizeLinear", [self.node("QuantizeLinear", [x, s, z]), s, z])

    def weights(self, shape: tuple[int, ...], axis: int = 0) -> str:
        """Per-channel s8 weights along ``axis`` and their DequantizeLinear."""
        q = self.rng.integers(-127, 128, shape).astype(np.int8)
        scales = (self.rng.random(shape[axis]) * 0.004 + 0.002).astype(np.float32)
        return self.node("DequantizeLinear", [self.const(q, "w"), self.const(scales, "ws"),
                                              self.const(np.zeros(shape[axis], np.int8), "wz")], axis=axis)

    def conv(self, x: str, cin: int, cout: int, k: int = 3, group: int = 1, name: str | None = None) -> str:
        w = self.weights((cout, cin // group, k, k))
        b = self.const((self.rng.standard_normal(cout) * 0.1).astype(np.float32), "b")
        return self.node("Conv", [x, w, b], name=name, pads=[k // 2] * 4, group=group)

    def model(self, inputs: dict[str, list[int]], output: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, "qdq", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                                      for n, s in inputs.items()],
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def residual_cnn() -> onnx.ModelProto:
    """u8 input with a zero point, conv + bias + ReLU, MaxPool between Q/DQ pairs, a residual block (conv,
    requantization, Add of the block's input, ReLU), global pooling and a Gemm; output quantized."""
    g = QdqGraph()
    x = g.qdq("x", 0.02, 128)
    h = g.qdq(g.node("Relu", [g.conv(x, 8, 16, name="conv1")]), 0.03, 0)
    h = g.qdq(g.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2]), 0.03, 0)
    r = g.qdq(g.conv(h, 16, 16, name="conv2"), 0.05, 120)
    h = g.qdq(g.node("Relu", [g.node("Add", [r, h])]), 0.04, 0)
    pooled = g.qdq(g.node("Flatten", [g.node("GlobalAveragePool", [h])]), 0.02, 0)
    w = g.weights((10, 16), axis=0)
    y = g.node("Gemm", [pooled, w, g.const(np.zeros(10, np.float32), "gb")], name="fc", transB=1)
    return g.model({"x": [1, 8, 16, 16]}, g.qdq(y, 0.01, 128))


def projection_block(main_first: bool = True) -> onnx.ModelProto:
    """A ResNet downsampling block: ``Add(main, shortcut)`` of two quantized convolutions (``main`` at input 0),
    written with either branch first in node order."""
    g = QdqGraph(3)
    x = g.qdq("x", 0.02, 128)

    def main() -> str:
        h = g.qdq(g.node("Relu", [g.conv(x, 8, 8, name="main1")]), 0.031, 0)
        return g.qdq(g.conv(h, 8, 16, k=1, name="main2"), 0.047, 128)

    def shortcut() -> str:
        return g.qdq(g.conv(x, 8, 16, k=1, name="shortcut"), 0.043, 128)

    m, s = (main(), shortcut()) if main_first else reversed((shortcut(), main()))
    return g.model({"x": [1, 8, 12, 12]}, g.qdq(g.node("Relu", [g.node("Add", [m, s])]), 0.029, 0))


def depthwise_cnn() -> onnx.ModelProto:
    """Symmetric s8 activations, a depthwise convolution with ReLU6 (Clip), a pointwise one."""
    g = QdqGraph(1)
    x = g.qdq("x", 0.02, 0, np.int8)
    h = g.qdq(g.node("Clip", [g.conv(x, 8, 8, group=8, name="dw"), g.const(np.float32(0)), g.const(np.float32(6))]),
              0.05, 0, np.int8)
    y = g.conv(h, 8, 12, k=1, name="pw")
    return g.model({"x": [1, 8, 12, 12]}, g.qdq(y, 0.02, 0, np.int8))


def per_channel_activation() -> onnx.ModelProto:
    """A convolution whose input is quantized per channel: no int8 form (runs in f32)."""
    g = QdqGraph(2)
    s, z = g.const(np.float32([0.01, 0.02, 0.03, 0.04]), "s"), g.const(np.zeros(4, np.uint8), "z")
    x = g.node("DequantizeLinear", [g.node("QuantizeLinear", ["x", s, z], axis=1), s, z], axis=1)
    return g.model({"x": [1, 4, 8, 8]}, g.conv(x, 4, 6, name="conv"))


def attention_block() -> onnx.ModelProto:
    """A self-attention head as onnxruntime quantizes it: Q, K, V projections, ``Q K^T`` and ``P V`` on two
    quantized tensors, Softmax between Q/DQ pairs (no int8 form: a rounding in f32)."""
    g = QdqGraph(3)
    x = g.qdq("x", 0.03, 128)
    q, k, v = (g.qdq(g.node("MatMul", [x, g.weights((32, 32), axis=1)], name=n), 0.05, 128) for n in "qkv")
    kt = g.node("Transpose", [k], perm=[0, 2, 1])
    scores = g.qdq(g.node("MatMul", [q, kt], name="scores"), 0.1, 128)
    p = g.qdq(g.node("Softmax", [scores], axis=-1), 1 / 255, 0)
    return g.model({"x": [1, 16, 32]}, g.qdq(g.node("MatMul", [p, v], name="context"), 0.05, 128))


def mlp_block() -> onnx.ModelProto:
    """A transformer's MLP as onnxruntime quantizes it: the first projection requantized, its bias, GELU as
    exporters write it (``x * 0.5 * (1 + erf(x / sqrt 2))``), the GELU's output quantized, the second projection."""
    g = QdqGraph(5)
    x = g.qdq("x", 0.03, 128)
    h = g.qdq(g.node("MatMul", [x, g.weights((32, 64), axis=1)], name="fc1"), 0.04, 120)
    h = g.node("Add", [h, g.const((g.rng.standard_normal(64) * 0.2).astype(np.float32), "b1")])
    erf = g.node("Erf", [g.node("Div", [h, g.const(np.float32(np.sqrt(2.0)))])])
    act = g.node("Mul", [g.node("Mul", [h, g.const(np.float32(0.5))]), g.node("Add", [erf, g.const(np.float32(1.0))])])
    y = g.node("MatMul", [g.qdq(act, 0.02, 10), g.weights((64, 32), axis=1)], name="fc2")
    return g.model({"x": [1, 16, 32]}, g.qdq(y, 0.05, 128))
