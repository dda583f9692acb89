"""Channels-last values between kernels: an NCHW-shaped array with NHWC strides, passed without copies.

A kernel may return such an array only when :func:`keeps_channels_last` says every reader takes it as it is
(the oneDNN convolutions, MaxPool and AvgPool); model outputs and other readers get C-contiguous arrays.
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._torch import strided_view, to_torch

#: op types whose kernels read a channels-last array without a copy
CHANNELS_LAST_READERS = frozenset({"FusedConvolution", "FusedConvolutionDW", "Convolution", "GroupConvolution",
                                   "MaxPool", "AvgPool", "Concat", "Add", "Subtract", "Multiply", "Transpose",
                                   "ShuffleChannels", "FusedScaleShift", "ConvolutionBackpropData",
                                   "GroupConvolutionBackpropData",
                                   "Interpolate", "Resize",
                                   # eltwise_dnnl, reduce_dnnl (their other kernels copy or make C-contiguous)
                                   "Relu", "Sigmoid", "Tanh", "Clamp", "Elu", "Gelu", "Swish", "HSwish",
                                   "HardSigmoid", "Sqrt", "Exp", "Abs", "ReduceMean", "ReduceSum", "ReduceMax",
                                   "ReduceMin",
                                   # the int8 layers and the (de)quantization around them (conv_int8, quantize)
                                   "QuantizedConvolution", "QuantizeLinear", "DequantizeLinear"})


def keeps_channels_last(node: Node) -> bool:
    """Whether output 0 of ``node`` (rank 4) is read only by kernels that take channels-last arrays."""
    rank = node.get_output_partial_shape(0).rank
    if rank.is_dynamic or rank.get_length() != 4:
        return False
    targets = node.output(0).get_target_inputs()
    return bool(targets) and all(_takes_channels_last(t.get_node()) for t in targets)


#: readers for which a Slice of a channels-last array is worth its gaps (copied where a segment needs): the
#: channels-last kernels proper (a channel split of ShuffleNet / CSP blocks between convolutions)
SLICE_TO_CHANNELS_LAST = frozenset({"FusedConvolution", "FusedConvolutionDW", "Convolution", "GroupConvolution",
                                    "MaxPool", "AvgPool", "Concat", "ShuffleChannels"})


def reads_channels_last_convert(node: Node) -> bool:
    """Whether ``node`` is an f32 <-> bf16 Convert of a static rank-4 value, which :mod:`.convert_dnnl`'s reorder
    runs from a channels-last input as it is (into the layout its own readers take)."""
    if node.type_name != "Convert":
        return False
    shape = node.get_input_partial_shape(0)
    pair = {node.get_input_element_type(0).get_type_name(), node.get_output_element_type(0).get_type_name()}
    return (pair == {"f32", "bf16"} and shape.is_static and len(shape) == 4 and 0 not in shape.to_shape()
            and library() is not None)


def _takes_channels_last(reader: Node) -> bool:
    """A reader that takes a channels-last array: one of :data:`CHANNELS_LAST_READERS` (a Concat only along the
    channels), an f32 <-> bf16 Convert (:func:`reads_channels_last_convert`), or a Slice read only by
    :data:`SLICE_TO_CHANNELS_LAST` kernels."""
    if reads_channels_last_convert(reader):
        return True
    if reader.type_name == "Slice":
        targets = reader.output(0).get_target_inputs()
        return bool(targets) and all(t.get_node().type_name in SLICE_TO_CHANNELS_LAST and _channel_concat_or_other(
            t.get_node()) for t in targets)
    return reader.type_name in CHANNELS_LAST_READERS and _channel_concat_or_other(reader)


def _channel_concat_or_other(node: Node) -> bool:
    """False for a Concat along another axis than the channels: a KV cache grown along its sequence axis (its
    oneDNN concat of channels-last parts into a dense cache is a reference loop); True for any other node."""
    return node.type_name != "Concat" or int(node.axis) % 4 == 1  # type: ignore[attr-defined]


def strided_torch(a: np.ndarray) -> torch.Tensor:
    """A zero-copy tensor with ``a``'s strides (channels-last stays so) where NumPy allows it (f32, bf16),
    else a copy."""
    t = strided_view(a)
    return to_torch(a) if t is None else t
