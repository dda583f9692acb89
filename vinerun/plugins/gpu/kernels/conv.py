"""Convolutions on cuDNN (through PyTorch): (Group)Convolution and (Group)ConvolutionBackpropData, 1-3-D, floats.

Symmetric non-negative pads go to cuDNN; other pads (asymmetric, negative, ``same_*``) are applied with ``F.pad``
first (forward) or by cropping / zero-extending the full transposed output (backprop). Grouped filters are
reshaped (and, for 2-D on CUDA, made channels-last) once, on the first call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import GpuKernel, constant_input, gpu_kernel
from vinerun.plugins.gpu.kernels._nn import channels_last, float_node, prepared_input, spatial_count, torch_pad

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}

def _filters(grouped: bool, nhwc: bool) -> Callable[[torch.Tensor], torch.Tensor]:
    """Filters as PyTorch takes them: ``[G, O/G, I/G, *K]`` -> ``[O, I/G, *K]``, channels-last on request."""

    def prepare(w: torch.Tensor) -> torch.Tensor:
        if grouped:
            w = w.reshape(-1, *w.shape[2:])
        return w.contiguous(memory_format=torch.channels_last) if nhwc else w.contiguous()

    return prepare


@dataclass(frozen=True)
class ConvCall:
    """A forward convolution's attributes bound: ``operands(x, w)`` gives what cuDNN takes (padded data, prepared
    filters, symmetric padding, groups); calling it runs the convolution with an optional bias."""

    conv: Callable[..., torch.Tensor]
    filters: Callable[[torch.Tensor], torch.Tensor]
    node: Node
    strides: list[int]
    dilations: list[int]
    grouped: bool
    nhwc: bool

    def operands(self, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list[int], int]:
        groups = w.shape[0] if self.grouped else 1
        w = self.filters(w)
        pb, pe = self.node.explicit_pads(list(x.shape[2:]), list(w.shape[2:]))
        if self.nhwc:
            x = x.contiguous(memory_format=torch.channels_last)
        if pb == pe and min(pb) >= 0:
            return x, w, list(pb), groups
        return F.pad(x, torch_pad(pb, pe)), w, [0] * len(pb), groups

    def __call__(self, x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        x, w, padding, groups = self.operands(x, w)
        return self.conv(x, w, bias, self.strides, padding, self.dilations, groups)


def conv_runner(node: Node, device: torch.device) -> ConvCall | None:
    """The forward convolution ``node`` (Convolution, GroupConvolution or a fused one) as a function of data,
    filters and an optional bias; None when it is not a float convolution of static rank 3-5."""
    n = spatial_count(node)
    if n not in _CONV or not float_node(node, 2):
        return None
    grouped = "GroupConvolution" in (node.type_name, getattr(node, "conv_type", ""))
    nhwc = channels_last(device, n)
    strides, dilations, _, _ = node.spatial_attrs(n)
    return ConvCall(_CONV[n], prepared_input(node, 1, _filters(grouped, nhwc)), node, list(strides),
                    list(dilations), grouped, nhwc)


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
