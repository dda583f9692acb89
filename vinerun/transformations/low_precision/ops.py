"""The nodes the low-precision fusion makes: a Convolution or MatMul on int8 data and int8 weights, with the
dequantization folded into output scales and the ops after it (bias, activations, requantizations, a residual
sum, the closing quantization) as its post-ops.

Internal ops: never written to IR (a compiled model exports the graph before fusion). Each keeps a NumPy
reference composed from the ops it replaced: dequantize, the original op on real values, the post-ops,
quantize.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np

from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.ops.activations import gelu
from vinerun.transformations.low_precision.params import ChannelQuantization, Quantization, Weights


@dataclass(frozen=True)
class Stage:
    """A post-op in real units. ``kind``: ``"relu"``, ``"clamp"`` (``low``, ``high``; with ``quantization``: the
    range of that grid, a requantization whose rounding was dropped), ``"gelu"`` (``mode``
    ``"ERF"`` or ``"TANH"``), ``"requantize"`` (round to ``quantization``'s grid and saturate, as a
    QuantizeLinear -> DequantizeLinear pair), ``"sum"`` (add the node's input ``index`` dequantized with
    ``quantization``), ``"add"`` (add the constant ``operand``, one value per output channel: a bias after a
    requantization)."""

    kind: str
    low: float = 0.0
    high: float = 0.0
    quantization: Quantization | ChannelQuantization | None = None
    index: int = 0
    operand: np.ndarray | None = field(default=None, compare=False)
    mode: str = ""

    def apply(self, y: np.ndarray, inputs: list, channel_axis: int = 1) -> np.ndarray:
        if self.kind == "gelu":
            return np.asarray(gelu(y, self.mode), np.float32)
        if self.kind == "add":
            shape = [1] * y.ndim
            shape[channel_axis] = -1
            return y + cast(np.ndarray, self.operand).reshape(shape)
        if self.kind == "relu":
            return np.maximum(y, np.float32(0))
        if self.kind == "clamp":
            return np.clip(y, np.float32(self.low), np.float32(self.high))
        q = cast(Quantization, self.quantization)  # requantize and sum stages always have one (per channel: axis 1)
        if self.kind == "requantize":
            return q.dequantize(q.quantize(y))
        return y + q.dequantize(inputs[self.index])


@dataclass
class QuantizedLayer:
    """What a quantized node computes: ``head`` (the detached original op) on ``input``-dequantized data and
    ``weights``, then ``bias`` (f32, one per output channel), the ``stages``, and ``output``'s quantization (None:
    an f32 output). ``fused_names``: (name, type) of the ops it replaced after the head."""

    head: Node
    input: Quantization
    weights: Weights | Quantization  # constant int8 weights, or the parameters of the node's input 1 (int8 data)
    bias: np.ndarray | None
    stages: list[Stage] = field(default_factory=list)
    output: Quantization | ChannelQuantization | None = None
    fused_names: list[tuple[str, str]] = field(default_factory=list)
    channel_axis: int = 1  # of the head's output: 1 for a convolution, -1 for a MatMul

    @property
    def runtime_weights(self) -> bool:
        """Whether the weights are the node's input 1 (a MatMul of two int8 tensors, e.g. attention scores)."""
        return isinstance(self.weights, Quantization)

    def real_weights(self, inputs: list) -> np.ndarray:
        if isinstance(self.weights, Quantization):
            return self.weights.dequantize(inputs[1])
        w = self.weights.values.astype(np.float32)
        axis = 0 if self.channel_axis == 1 else self._matmul_weight_axis()
        shape = [1] * w.ndim
        if self.head.type_name == "GroupConvolution":  # [G, O / G, ...]: scales over the first two axes
            return (w.reshape(-1, *w.shape[2:]) * self.weights.scales.reshape(-1, *[1] * (w.ndim - 2))
                    ).reshape(w.shape)
        shape[axis] = -1
        return w * self.weights.scales.reshape(shape)

    def _matmul_weight_axis(self) -> int:
        return -2 if getattr(self.head, "transpose_b", False) else -1

    def evaluate(self, inputs: list) -> np.ndarray:
        x = self.input.dequantize(inputs[0])
        y = np.asarray(self.head.evaluate([x, self.real_weights(inputs)])[0], np.float32)
        if self.bias is not None:
            shape = [1] * y.ndim
            shape[self.channel_axis] = -1
            y = y + self.bias.reshape(shape)
        for stage in self.stages:
            y = stage.apply(y, inputs, self.channel_axis)
        return y if self.output is None else self.output.quantize(y)


class QuantizedNode(Node):
    """Shared by the quantized Convolution and MatMul: inputs are the int8 data (a MatMul of two int8 tensors: both),
    then the residuals the sum stages read; the layer (:class:`QuantizedLayer`) holds the rest."""

    num_inputs = (1, 5)

    @classmethod
    def make(cls, data: list, layer: QuantizedLayer, name: str) -> QuantizedNode:
        node = cls.__new__(cls)
        node.__dict__["_layer"] = layer
        Node.__init__(node, data, name=name)
        node.rt_info.update(layer.head.rt_info)
        return node

    @property
    def layer(self) -> QuantizedLayer:
        return self.__dict__["_layer"]

    @property
    def fused_names(self) -> list[tuple[str, str]]:
        return list(self.layer.fused_names)

    def infer(self) -> list:
        layer = self.layer
        et = Type.f32 if layer.output is None else Type(layer.output.dtype)
        return [(et, layer.head.get_output_partial_shape(0))]

    def evaluate(self, inputs: list) -> list:
        return [self.layer.evaluate(inputs)]


class QuantizedConvolution(QuantizedNode):
    """A (Group)Convolution on int8 data: see :class:`QuantizedLayer`."""

    type_name, version = "QuantizedConvolution", "vinerun_lpt"


class QuantizedMatMul(QuantizedNode):
    """A MatMul of int8 data by constant int8 weights, or by another int8 tensor: see :class:`QuantizedLayer`."""

    type_name, version = "QuantizedMatMul", "vinerun_lpt"
