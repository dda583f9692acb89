"""Convolutions on cuDNN (through PyTorch): (Group)Convolution and (Group)ConvolutionBackpropData, 1-3-D, floats.

Symmetric non-negative pads go to cuDNN; other pads (asymmetric, negative, ``same_*``) are applied with ``F.pad``
first (forward) or by cropping / zero-extending the full transposed output (backprop). Grouped filters are
reshaped (and, for 2-D on CUDA, made channels-last) once, on the first call.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import GpuKernel, constant_input, gpu_kernel
from vinerun.plugins.gpu.kernels._nn import channels_last, float_node, prepared_input, spatial_count, torch_pad

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}

#: ``run(x, w, bias) -> y``: a convolution with its attributes bound
ConvFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | None], torch.Tensor]


def _filters(grouped: bool, nhwc: bool) -> Callable[[torch.Tensor], torch.Tensor]:
    """Filters as PyTorch takes them: ``[G, O/G, I/G, *K]`` -> ``[O, I/G, *K]``, channels-last on request."""

    def prepare(w: torch.Tensor) -> torch.Tensor:
        if grouped:
            w = w.reshape(-1, *w.shape[2:])
        return w.contiguous(memory_format=torch.channels_last) if nhwc else w.contiguous()

    return prepare


def conv_runner(node: Node, device: torch.device) -> ConvFn | None:
    """The forward convolution ``node`` (Convolution, GroupConvolution or a fused one) as a function of data,
    filters and an optional bias; None when it is not a float convolution of static rank 3-5."""
    n = spatial_count(node)
    if n not in _CONV or not float_node(node, 2):
        return None
    conv = _CONV[n]
    grouped = "GroupConvolution" in (node.type_name, getattr(node, "conv_type", ""))
    nhwc = channels_last(device, n)
    filters = prepared_input(node, 1, _filters(grouped, nhwc))
    strides, dilations, _, _ = node.spatial_attrs(n)
    groups_of = (lambda w: w.shape[0]) if grouped else (lambda w: 1)

    def run(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        groups = groups_of(w)
        w = filters(w)
        pb, pe = node.explicit_pads(list(x.shape[2:]), list(w.shape[2:]))
        if nhwc:
            x = x.contiguous(memory_format=torch.channels_last)
        if pb == pe and min(pb) >= 0:
            return conv(x, w, bias, strides, pb, dilations, groups)
        return conv(F.pad(x, torch_pad(pb, pe)), w, bias, strides, 0, dilations, groups)

    return run


@gpu_kernel("Convolution", "GroupConvolution")
def convolution(node: Node, device: torch.device) -> GpuKernel | None:
    run = conv_runner(node, device)
    if run is None:
        return None
    return GpuKernel(lambda x: [run(x[0], x[1], None)], "cudnn_conv")


@gpu_kernel("ConvolutionBackpropData", "GroupConvolutionBackpropData")
def convolution_backprop(node: Node, device: torch.device) -> GpuKernel | None:
    n = spatial_count(node)
    if n not in _CONV_T or not float_node(node, 2):
        return None
    out_shape = constant_input(node, 2)
    if node.get_input_size() > 2 and out_shape is None:
        return None  # a computed output_shape would need a read on the host
    conv_t = _CONV_T[n]
    grouped = node.type_name == "GroupConvolutionBackpropData"
    filters = prepared_input(node, 1, _filters(grouped, False))

    def run(inputs: list) -> list:
        x, w = inputs[0], inputs[1]
        groups = w.shape[0] if grouped else 1
        w = filters(w)
        strides, dilations, pb, pe, op = node.resolve(list(x.shape[2:]), list(w.shape[2:]), out_shape)
        y = conv_t(x, w, None, strides, 0, 0, groups, dilations)
        crop = torch_pad([-b for b in pb], [o - e for o, e in zip(op, pe, strict=True)])
        return [F.pad(y, crop) if any(crop) else y]

    return GpuKernel(run, "cudnn_deconv")
