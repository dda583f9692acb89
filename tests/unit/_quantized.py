"""Small quantized models for the device tests: ONNX QDQ (built with the onnx helper) and FakeQuantize graphs as
NNCF writes them (built with vinerun's opset builders)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import vinerun as ov
from vinerun import opset13 as ops


def _qdq(nodes: list, inits: list, name: str, src: str, scale: float, zp: int, dtype: type = np.uint8) -> str:
    """Append ``src -> QuantizeLinear -> DequantizeLinear`` (per tensor) and return the DQ output's name."""
    inits += [numpy_helper.from_array(np.array(scale, np.float32), f"{name}_s"),
              numpy_helper.from_array(np.array(zp, dtype), f"{name}_zp")]
    nodes += [helper.make_node("QuantizeLinear", [src, f"{name}_s", f"{name}_zp"], [f"{name}_q"], name=f"{name}_Q"),
              helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_zp"], [f"{name}_dq"],
                               name=f"{name}_DQ")]
    return f"{name}_dq"


def _int8_weights(nodes: list, inits: list, name: str, w: np.ndarray, axis: int) -> str:
    """Per-channel symmetric int8 weights (``axis`` the output channels) behind a DequantizeLinear."""
    other = tuple(i for i in range(w.ndim) if i != axis)
    scale = (np.max(np.abs(w), axis=other) / 127).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    inits += [numpy_helper.from_array(q, f"{name}_wq"), numpy_helper.from_array(scale, f"{name}_ws"),
              numpy_helper.from_array(np.zeros_like(scale, np.int8), f"{name}_wzp")]
    nodes.append(helper.make_node("DequantizeLinear", [f"{name}_wq", f"{name}_ws", f"{name}_wzp"], [f"{name}_w"],
                                  name=f"{name}_wDQ", axis=axis))
    return f"{name}_w"


def _model(nodes: list, inits: list, inputs: list, outputs: list, name: str) -> bytes:
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def qdq_speech_onnx(features: int = 16, hidden: int = 24, outputs: int = 8, seed: int = 0) -> bytes:
    """A speech-like QDQ model: ``x -> Q/DQ -> MatMul(int8 W1) + b1 -> Sigmoid -> Q/DQ -> MatMul(int8 W2) + b2``."""
    rng = np.random.default_rng(seed)
    nodes: list = []
    inits: list = []
    x = _qdq(nodes, inits, "in", "x", 4.0 / 255, 128)
    w1 = _int8_weights(nodes, inits, "fc1", (rng.standard_normal((features, hidden)) * 0.3).astype(np.float32), 1)
    inits.append(numpy_helper.from_array((rng.standard_normal(hidden) * 0.1).astype(np.float32), "b1"))
    nodes += [helper.make_node("MatMul", [x, w1], ["mm1"], name="fc1"),
              helper.make_node("Add", ["mm1", "b1"], ["a1"], name="fc1_bias"),
              helper.make_node("Sigmoid", ["a1"], ["h1"], name="sigmoid")]
    h = _qdq(nodes, inits, "hid", "h1", 1.0 / 255, 0)
    w2 = _int8_weights(nodes, inits, "fc2", (rng.standard_normal((hidden, outputs)) * 0.3).astype(np.float32), 1)
    inits.append(numpy_helper.from_array((rng.standard_normal(outputs) * 0.1).astype(np.float32), "b2"))
    nodes += [helper.make_node("MatMul", [h, w2], ["mm2"], name="fc2"),
              helper.make_node("Add", ["mm2", "b2"], ["y"], name="fc2_bias")]
    return _model(nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, features])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, outputs])], "qdq_speech")


def qdq_conv_onnx(batch: int = 1, seed: int = 0) -> bytes:
    """A QDQ CNN: ``x[N,3,16,16] -> Q/DQ -> Conv(int8, per-channel) + Relu -> Q/DQ -> MaxPool -> Conv -> Relu -> Q/DQ
    -> GlobalAveragePool -> Flatten -> Gemm(int8) -> y[N,10]``, as onnxruntime's ``quantize_static`` writes."""
    rng = np.random.default_rng(seed)
    nodes: list = []
    inits: list = []
    x = _qdq(nodes, inits, "in", "x", 6.0 / 255, 128)
    w1 = _int8_weights(nodes, inits, "conv1", (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), 0)
    w2 = _int8_weights(nodes, inits, "conv2", (rng.standard_normal((16, 8, 3, 3)) * 0.15).astype(np.float32), 0)
    wf = _int8_weights(nodes, inits, "fc", (rng.standard_normal((10, 16)) * 0.3).astype(np.float32), 0)
    inits += [numpy_helper.from_array((rng.standard_normal(8) * 0.1).astype(np.float32), "cb1"),
              numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32), "cb2"),
              numpy_helper.from_array((rng.standard_normal(10) * 0.1).astype(np.float32), "fb")]
    nodes += [helper.make_node("Conv", [x, w1, "cb1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c1"], ["r1"], name="relu1")]
    r1 = _qdq(nodes, inits, "act1", "r1", 4.0 / 255, 0)
    nodes += [helper.make_node("MaxPool", [r1], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
              helper.make_node("Conv", ["p1", w2, "cb2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
              helper.make_node("Relu", ["c2"], ["r2"], name="relu2")]
    r2 = _qdq(nodes, inits, "act2", "r2", 4.0 / 255, 0)
    nodes += [helper.make_node("GlobalAveragePool", [r2], ["g"], name="gap"),
              helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
              helper.make_node("Gemm", ["f", wf, "fb"], ["y"], name="fc", transB=1)]
    return _model(nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 16, 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], "qdq_conv")


def _fq(x: ov.Output | ov.Node, lo: float | np.ndarray, hi: float | np.ndarray, levels: int, name: str,
        on: bool = True) -> ov.Output | ov.Node:
    if not on:
        return x
    lo_c, hi_c = ops.constant(np.asarray(lo, np.float32)), ops.constant(np.asarray(hi, np.float32))
    return ops.fake_quantize(x, lo_c, hi_c, lo_c, hi_c, levels, name=name)


def _compressed(w: np.ndarray, name: str, on: bool = True) -> ov.Node:
    """NNCF's int8 weights: ``Constant(i8) -> Convert -> Multiply(per-output-channel scale)`` for a ``[K, N]`` W."""
    if not on:
        return ops.constant(w)
    scale = (np.max(np.abs(w), axis=0, keepdims=True) / 127).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return ops.multiply(ops.convert(ops.constant(q), "f32"), ops.constant(scale), name=f"{name}/fq_weights_1")


def fq_speech_model(features: int = 16, hidden: int = 24, outputs: int = 8, seed: int = 0,
                    quantized: bool = True) -> ov.Model:
    """An NNCF-style FakeQuantize model of a small speech network: FQ on the input, int8 compressed weights, FQ after
    the sigmoid; a second branch with f32 weights behind a per-channel FakeQuantize (255 levels) and a FakeQuantize
    on an affine output (no activation between two layers)."""
    rng = np.random.default_rng(seed)
    x = ops.parameter([1, features], name="x")
    xq = _fq(x, -2.0, 2.0, 256, "x/fq_output_0", quantized)
    w1 = (rng.standard_normal((features, hidden)) * 0.3).astype(np.float32)
    a1 = ops.add(ops.matmul(xq, _compressed(w1, "fc1", quantized), False, False, name="fc1"),
                 ops.constant((rng.standard_normal(hidden) * 0.1).astype(np.float32)), name="fc1/bias")
    h = _fq(ops.sigmoid(a1, name="sigmoid"), 0.0, 1.0, 256, "sigmoid/fq_output_0", quantized)
    w2 = (rng.standard_normal((outputs, hidden)) * 0.3).astype(np.float32)
    span = np.max(np.abs(w2), axis=1, keepdims=True)
    w2q = _fq(ops.constant(w2), -span, span, 255, "fc2/fq_weights_1", quantized)
    a2 = ops.matmul(h, w2q, False, True, name="fc2")
    a2q = _fq(a2, -4.0, 4.0, 256, "fc2/fq_output_0", quantized)
    w3 = (rng.standard_normal((outputs, outputs)) * 0.3).astype(np.float32)
    y = ops.matmul(a2q, _compressed(w3, "fc3", quantized), False, False, name="fc3")
    return ov.Model([y], [x], "fq_speech")
