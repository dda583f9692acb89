"""Convolution kernels on ATen/oneDNN: (Group)Convolution and (Group)ConvolutionBackpropData, 1-3-D, floats.

2-D f32 convolutions with constant filters and symmetric pads take the prepacked oneDNN path of
:mod:`.fused_conv`; 1-D ones by constant filters oneDNN where it has a direct implementation for their static
shape (:mod:`.conv1d_dnnl`), else the f32 matrix product of :mod:`.conv1d`. Otherwise
symmetric pads go to the ATen op; asymmetric (or negative) ones are applied with ``F.pad`` first
(forward) or by cropping the full transposed output (backprop).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last, strided_torch
from vinerun.plugins.cpu.kernels._torch import float_node, static_rank, strided_numpy, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv1d import conv1d_matmul_kernel

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def spatial_count(node: Node) -> int | None:
    """The number of spatial axes of the data (input 0), when its rank is static."""
    rank = static_rank(node)
    return None if rank is None else rank - 2


def torch_pad(begin: list[int], end: list[int]) -> list[int]:
    """``F.pad``'s argument order (last axis first) for per-axis begin/end pads."""
    out: list[int] = []
    for b, e in zip(reversed(begin), reversed(end), strict=True):
        out += [b, e]
    return out


@cpu_kernel("Convolution", "GroupConvolution")
def convolution(node: Node) -> Kernel | None:
    n = spatial_count(node)
    if n not in _CONV or not float_node(node):
        return None
    from vinerun.plugins.cpu.kernels.fused_conv import prepacked_convolution  # it imports this module

    prepacked = prepacked_convolution(node) if n in (1, 2) else None
    if prepacked is None and n == 1:
        prepacked = conv1d_matmul_kernel(node)
    if prepacked is not None:
        return prepacked
    conv = _CONV[n]
    grouped = node.type_name == "GroupConvolution"
    strides, dilations, _, _ = node.spatial_attrs(n)

    def run(inputs: list) -> list:
        x, w = to_torch(inputs[0]), to_torch(inputs[1])
        groups = 1
        if grouped:
            groups = w.shape[0]
            w = w.reshape(-1, *w.shape[2:])
        pb, pe = node.explicit_pads(list(x.shape[2:]), list(w.shape[2:]))
        if pb == pe and min(pb) >= 0:
            padding = pb
        else:
            x, padding = F.pad(x, torch_pad(pb, pe)), [0] * n
        return [to_numpy(conv(x, w, None, strides, padding, dilations, groups))]

    return Kernel(run, f"aten_conv{n}d")


@cpu_kernel("ConvolutionBackpropData", "GroupConvolutionBackpropData")
def convolution_backprop(node: Node) -> Kernel | None:
    from vinerun.plugins.cpu.kernels.deconv_dnnl import dnnl_deconv_kernel  # it imports this module's helpers

    direct = dnnl_deconv_kernel(node)
    if direct is not None:
        return direct
    n = spatial_count(node)
    if n not in _CONV_T or not float_node(node):
        return None
    conv_t = _CONV_T[n]
    grouped = node.type_name == "GroupConvolutionBackpropData"
    # 2-D: channels-last data takes oneDNN's deconvolution inside ATen; NCHW takes a generic path ~16x slower
    # (a 2x2 stride-2 deconvolution of [1, 24, 160, 160]: 0.78 ms against 12.4)
    channels_last = n == 2
    keep_cl = channels_last and keeps_channels_last(node)

    def run(inputs: list) -> list:
        if channels_last:
            x = strided_torch(inputs[0]).contiguous(memory_format=torch.channels_last)
        else:
            x = to_torch(inputs[0])
        w = to_torch(inputs[1])
        out_shape = inputs[2] if len(inputs) > 2 else None
        groups = 1
        if grouped:
            groups = w.shape[0]
            w = w.reshape(-1, *w.shape[2:])
        strides, dilations, pb, pe, op = node.resolve(list(x.shape[2:]), list(w.shape[2:]), out_shape)
        y = conv_t(x, w, None, strides, 0, 0, groups, dilations)
        crop = torch_pad([-b for b in pb], [o - e for o, e in zip(op, pe, strict=True)])
        if any(crop):
            y = F.pad(y, crop)
        return [strided_numpy(y) if keep_cl and y.is_contiguous(memory_format=torch.channels_last)
                else to_numpy(y.contiguous())]

    return Kernel(run, f"aten_conv_transpose{n}d")
