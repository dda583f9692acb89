"""Low-precision fusion: a Convolution or MatMul whose data input is dequantized int8 and whose weights are a
constant int8 dequantization becomes one :class:`~.ops.QuantizedConvolution` / :class:`~.ops.QuantizedMatMul`
that computes on the integers, the dequantization folded into its output scales (OpenVINO's low-precision
transformations, for the Q/DQ form ONNX exporters and quantizers write).

After the head op the chain takes, each link read only by the next: a constant bias ``Add``; ``Relu`` /
``Clamp``; a ``QuantizeLinear -> DequantizeLinear`` pair followed by more links (a requantization, kept as
rounding to that grid); an ``Add`` of another dequantized int8 tensor (a residual sum); and a closing
``QuantizeLinear``, whose integers the node then hands out (else its output is f32). Per-tensor activation
parameters only (u8 / i8, any zero point); weights per tensor or per output channel.

Two choices follow openvino's CPU plugin, so that an NNCF or QDQ model gives openvino's numbers: where both
inputs of a residual ``Add`` are quantized convolution outputs, the one at input 0 takes the sum (heads are
visited in the model's order, depth first with input 0 first, so that one comes first); and a convolution whose
own output quantization is followed by the sum and a closing quantization skips that first rounding (it only
clamps to the grid's range; openvino drops it for speed, see :func:`_drop_residual_rounding`), unless the sum
reads the convolution's own input (openvino runs that sum apart, after the rounding).

A pattern that does not fit (per-channel activation scales, a non-constant weight, a blocked quantization)
stays as it is and runs in f32: the profile shows its DequantizeLinear and f32 Convolution.
"""

from __future__ import annotations

import re

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.transformations.low_precision.ops import QuantizedConvolution, QuantizedLayer, QuantizedMatMul, Stage
from vinerun.transformations.low_precision.params import (
    ChannelQuantization,
    Quantization,
    Weights,
    activation_params,
    channel_params,
    constant_value,
    weight_params,
)
from vinerun.transformations.low_precision.propagate import PRESERVING
from vinerun.transformations.pass_infra import InPlacePass, PassResult

CONVOLUTIONS = ("Convolution", "GroupConvolution")


def _only_reader(value: Output) -> Node | None:
    targets = value.get_target_inputs()
    if len(targets) != 1:
        return None
    return next(iter(targets)).get_node()


def _other_input(node: Node, value: Output) -> Output:
    a, b = node.input_values()
    return b if a == value else a


def _scalar_bound(node: Node, value: Output) -> float | None:
    """The constant scalar a Maximum / Minimum compares ``value`` with, or None."""
    b = constant_value(_other_input(node, value))
    return None if b is None or b.size != 1 else float(np.asarray(b).reshape(-1)[0])


def _dequantized_int8(value: Output) -> tuple[Output, Quantization] | None:
    """(the int8 tensor, its parameters) when ``value`` is a per-tensor DequantizeLinear of a non-constant."""
    node = value.node
    q = activation_params(node) if node.type_name == "DequantizeLinear" else None
    if q is None or isinstance(node.input_value(0).node, Constant):
        return None
    return node.input_value(0), q


def _bias(node: Node, value: Output, channels: int, axis: int) -> np.ndarray | None:
    """A constant Add's per-output-channel bias, or None."""
    other = _other_input(node, value)
    b = constant_value(other)
    if b is None or b.size not in (1, channels) or b.dtype.kind != "f":
        return None
    rank = value.partial_shape.rank.get_length()
    if b.size == channels and channels > 1:
        full = (1,) * (rank - b.ndim) + b.shape
        if b.ndim > rank or full[axis % rank] != channels:
            return None
    return np.broadcast_to(np.asarray(b, np.float32).reshape(-1), (channels,)).copy()


def _takes_int8(node: Node, value: Output) -> bool:
    """Whether ``node``, reading dequantized ``value``, will likely run on the integers (an int8 layer, a
    residual sum of one, a precision-preserving op)."""
    t = node.type_name
    if t in CONVOLUTIONS:
        return node.input_value(0) == value and weight_params(node.input_value(1), 0) is not None and \
            (activation_params(value.node) is not None or _depthwise_per_channel(node) is not None)
    if t == "MatMul":  # by constant int8 weights, or of two int8 tensors (attention)
        if node.input_value(1) == value:
            return _dequantized_int8(node.input_value(0)) is not None
        other = node.input_value(1)
        return _dequantized_int8(other) is not None or other.partial_shape.rank.get_length() == 2 and \
            weight_params(other, 0 if node.transpose_b else 1) is not None  # type: ignore[attr-defined]
    if t == "Add":
        return _dequantized_int8(_other_input(node, value)) is not None
    return t in PRESERVING


def _drop_residual_rounding(layer: QuantizedLayer) -> None:
    """A convolution whose first stage requantizes its output, followed by a residual sum and a closing
    quantization, only clamps to that grid's range: openvino's CPU plugin drops this rounding ("one special
    residual pattern") and its int8 ResNets' numbers (and speed: two post-ops fewer) come from that."""
    stages = layer.stages
    if layer.output is None or len(stages) < 2 or stages[0].kind != "requantize" or \
            not any(stage.kind == "sum" for stage in stages[1:]):
        return
    q = stages[0].quantization
    assert isinstance(q, Quantization)  # noqa: S101 - a requantization inside a chain is per tensor
    # the grid stays with the clamp: openvino clamps on it (in its integers, before the sum), see int8_epilogue
    stages[0] = Stage("clamp", *(float(np.float32(bound)) for bound in q.real_range()), quantization=q)


def _int8_readers(q: Node, params: Quantization | ChannelQuantization) -> bool:
    """Whether a closing QuantizeLinear's integers are read as such: by anything but same-parameter
    DequantizeLinears, or through one by an op that takes int8 (else the layer hands out f32)."""
    for target in q.output(0).get_target_inputs():
        dq = target.get_node()
        same = activation_params(dq) if isinstance(params, Quantization) else channel_params(dq)
        if dq.type_name != "DequantizeLinear" or same != params:
            return True
        if any(_takes_int8(t.get_node(), dq.output(0)) for t in dq.output(0).get_target_inputs()):
            return True
    return False


def _depthwise_per_channel(head: Node) -> _Chain | None:
    """A depthwise convolution whose input is quantized per channel (NNCF does so): each output channel reads
    one input channel, so the input's scales fold into the weights' and the data runs with scale 1 (the zero
    points must agree)."""
    dq = head.input_value(0).node
    q = channel_params(dq) if dq.type_name == "DequantizeLinear" else None
    w = head.input_value(1).partial_shape
    if q is None or isinstance(dq.input_value(0).node, Constant) or head.type_name != "GroupConvolution" or \
            not w.is_static or list(w.to_shape())[1:3] != [1, 1] or q.common_zero_point is None:
        return None
    weights = weight_params(head.input_value(1), 0)
    if weights is None or weights.scales.size != q.scales.size:
        return None
    folded = Weights(weights.values, (weights.scales * q.scales).astype(np.float32))
    data = (dq.input_value(0), Quantization(1.0, q.common_zero_point or 0, q.dtype))
    return _Chain(head, data, folded, 1)


class _Chain:
    """A quantized node being assembled: the layer, its inputs, the nodes it replaces and the value it ends at."""

    def __init__(self, head: Node, data: tuple[Output, Quantization], weights: Weights | tuple[Output, Quantization],
                 axis: int):
        self.head, self.conv = head, head.type_name in CONVOLUTIONS
        runtime = isinstance(weights, tuple)
        self.layer = QuantizedLayer(head, data[1], weights[1] if runtime else weights, None,  # type: ignore[index]
                                    channel_axis=axis)
        self.inputs: list[Output] = [data[0], weights[0]] if runtime else [data[0]]  # type: ignore[index]
        self.nodes: list[Node] = [head]
        self.name = head.friendly_name
        self.last = head.output(0)  # the value the fused node stands for (so far)
        self.before_sum: tuple | None = None  # the state before a residual sum was taken

    @property
    def channels(self) -> int:
        """Output channels (0 where a bias cannot be matched: weights that are data)."""
        weights = self.layer.weights
        return weights.scales.size if isinstance(weights, Weights) else 0

    def mark(self) -> tuple:
        """The chain's state, to go back to (:meth:`restore`)."""
        layer = self.layer
        return (len(layer.stages), len(layer.fused_names), len(self.nodes), len(self.inputs), self.last)

    def restore(self, state: tuple) -> None:
        stages, names, nodes, inputs, self.last = state
        del self.layer.stages[stages:], self.layer.fused_names[names:], self.nodes[nodes:], self.inputs[inputs:]

    def sums_own_input(self) -> bool:
        """Whether the residual sum reads the layer's own input: openvino's CPU plugin does not fuse that sum (it
        would overwrite the input in place), so the requantization before it keeps its rounding there."""
        return any(stage.kind == "sum" and self.inputs[stage.index] == self.inputs[0] for stage in self.layer.stages)

    def has_sum(self) -> bool:
        return any(stage.kind == "sum" for stage in self.layer.stages)

    def take(self, node: Node, stage: Stage | None = None) -> None:
        """``node`` joins the chain (as ``stage``, if it computes one); the chain now ends at its output."""
        if stage is not None:
            self.layer.stages.append(stage)
        self.layer.fused_names.append((node.friendly_name, node.type_name))
        self.nodes.append(node)
        self.last = node.output(0)

    def take_bias(self, add: Node, bias: np.ndarray) -> None:
        """The bias ``Add``. An ONNX Conv / Gemm with a bias has its name on the Add and an unnamed head
        (``Convolution_153``): the fused node takes the Add's name then."""
        self.layer.bias = bias
        if re.fullmatch(rf"{self.head.type_name}_\d+", self.head.friendly_name):
            self.name = add.friendly_name
        self.layer.fused_names.append((self.head.friendly_name, self.head.type_name))
        self.nodes.append(add)
        self.last = add.output(0)

    def replace(self, values: list[Output]) -> None:
        """The fused node takes the place of ``values`` (each the chain's result); the chain's nodes go."""
        make = QuantizedConvolution if self.conv else QuantizedMatMul
        fused = make.make(self.inputs, self.layer, self.name)
        for value in values:
            replace_output_update_name(value, fused.output(0))
        for node in self.nodes:  # dead now; a dead node still counts among its producers' readers
            node.detach()


class LowPrecisionFusion(InPlacePass):
    """Convolution / MatMul chains on dequantized int8 data become quantized nodes (see the module)."""

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            if node.type_name in CONVOLUTIONS or node.type_name == "MatMul":
                if node.get_output_size() and node.output(0).get_target_inputs() and self._fuse(node):
                    modified = True
        return PassResult(model, modified)

    def _start(self, head: Node) -> _Chain | None:
        """The chain of a head op with int8 data and int8 weights, or None."""
        if head.get_output_partial_shape(0).rank.is_dynamic:
            return None
        data = _dequantized_int8(head.input_value(0))
        if data is None:
            return _depthwise_per_channel(head)
        if head.type_name in CONVOLUTIONS:
            weights, axis = weight_params(head.input_value(1), 0), 1
        else:
            if head.transpose_a:  # type: ignore[attr-defined]
                return None
            weights = None
            if head.get_input_partial_shape(1).rank.get_length() == 2:  # constant weights: a 2-D matrix
                weights = weight_params(head.input_value(1), 0 if head.transpose_b else 1)  # type: ignore[attr-defined]
            axis = -1
            if weights is None and (other := _dequantized_int8(head.input_value(1))) is not None:
                return _Chain(head, data, other, axis)  # two int8 tensors (attention's Q K^T, P V)
        return None if weights is None else _Chain(head, data, weights, axis)

    def _fuse(self, head: Node) -> bool:
        chain = self._start(head)
        return chain is not None and self._extend(chain)

    def _extend(self, chain: _Chain) -> bool:
        """Take the links after the chain's end, each read only by the next, and replace the chain."""
        while (reader := _only_reader(chain.last)) is not None:
            value, t = chain.last, reader.type_name
            if t == "Add" and chain.layer.bias is None and not chain.layer.stages and \
                    (bias := _bias(reader, value, chain.channels, chain.layer.channel_axis)) is not None:
                chain.take_bias(reader, bias)
            elif t == "Add" and chain.layer.stages and chain.channels and \
                    (bias := _bias(reader, value, chain.channels, chain.layer.channel_axis)) is not None:
                chain.take(reader, Stage("add", operand=bias))  # a bias after a requantization
            elif t == "Relu":
                chain.take(reader, Stage("relu"))
            elif t == "Gelu":  # a transformer's MLP: its quantization after the GELU then closes the layer
                chain.take(reader, Stage("gelu", mode=str(getattr(reader, "approximation_mode", "ERF")).upper()))
            elif t == "Clamp":
                chain.take(reader, Stage("clamp", float(reader.min), float(reader.max)))  # type: ignore[attr-defined]
            elif t in ("Maximum", "Minimum") and (bound := _scalar_bound(reader, value)) is not None:
                # ReLU6 as IR converters write Clip: Minimum(Maximum(x, 0), 6)
                chain.take(reader, Stage("clamp", *((bound, np.inf) if t == "Maximum" else (-np.inf, bound))))
            elif t == "Add" and not chain.has_sum() and len(chain.inputs) < 5 and \
                    (residual := _dequantized_int8(_other_input(reader, value))) is not None:
                chain.before_sum = chain.mark()
                chain.take(reader, Stage("sum", quantization=residual[1], index=len(chain.inputs)))
                chain.inputs.append(residual[0])
            elif t == "QuantizeLinear" and (q := activation_params(reader)) is not None:
                return self._quantized(chain, reader, q)
            elif t == "QuantizeLinear" and (cq := channel_params(reader)) is not None and chain.conv and \
                    not chain.has_sum():  # per channel, as NNCF quantizes a depthwise convolution's input
                return self._quantized(chain, reader, cq)
            else:
                break
        if chain.last.element_type.is_static() and not chain.last.element_type.is_real():
            return False
        if chain.before_sum is not None:  # an f32 output: the residual's integers cannot be read in place of it
            chain.restore(chain.before_sum)
        chain.replace([chain.last])
        return True

    def _quantized(self, chain: _Chain, q_node: Node, q: Quantization | ChannelQuantization) -> bool:
        """The chain reached a QuantizeLinear: a requantization inside it (a same-parameter DequantizeLinear
        follows, then more of the chain), its int8 output, or an f32 output rounded to the grid where only f32
        ops read the integers (through DequantizeLinears)."""
        dq = _only_reader(q_node.output(0))
        after = None if dq is None else _only_reader(dq.output(0))
        if isinstance(q, Quantization) and dq is not None and activation_params(dq) == q and after is not None and \
                after.type_name in ("Add", "Relu", "Clamp", "Maximum", "Minimum"):
            chain.take(q_node, Stage("requantize", quantization=q))
            chain.take(dq)
            return self._extend(chain)
        # a sum reads its residual's integers in place of the destination: an int8 output then
        if _int8_readers(q_node, q) or chain.has_sum():
            chain.layer.output = q
            if chain.conv and not chain.sums_own_input():
                _drop_residual_rounding(chain.layer)
            chain.take(q_node)
            chain.replace([chain.last])
            return True
        chain.take(q_node, Stage("requantize", quantization=q))
        dqs = [t.get_node() for t in q_node.output(0).get_target_inputs()]
        chain.layer.fused_names += [(dq.friendly_name, dq.type_name) for dq in dqs]
        chain.nodes += dqs
        chain.replace([dq.output(0) for dq in dqs])
        return True
