"""Pooling kernels on ATen: MaxPool (values and indices) and AvgPool, 1-3-D, floats.

ATen pads symmetrically by at most half the kernel and its ``ceil_mode`` is ``ceil_torch``; other
cases either pad first (max pooling with ``floor``) or run the reference. f32 and bf16 2-D pooling run oneDNN directly
where it can (:mod:`.pool_dnnl`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last, strided_torch
from vinerun.plugins.cpu.kernels._torch import float_node, strided_numpy, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv import spatial_count, torch_pad
from vinerun.plugins.cpu.kernels.pool_dnnl import dnnl_pool_kernel

_MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def aten_padding(pb: list[int], pe: list[int], kernel: list[int], dilations: list[int]) -> list[int] | None:
    """The symmetric padding ATen accepts, or None."""
    if pb != pe or any(p > (d * (k - 1) + 1) // 2 for p, k, d in zip(pb, kernel, dilations, strict=True)):
        return None
    return pb


def plane_offsets(shape: list[int], axis: int) -> torch.Tensor | int:
    """What to add to ATen's per-(N, C)-plane indices to make them flat over ``shape[axis:]``."""
    n, c = shape[:2]
    plane = 1
    for s in shape[2:]:
        plane *= s
    ones = [1] * (len(shape) - 2)
    if axis == 0:
        return (torch.arange(n * c) * plane).reshape(n, c, *ones)
    if axis == 1:
        return (torch.arange(c) * plane).reshape(1, c, *ones)
    return 0


def unpad_indices(idx: torch.Tensor, padded: list[int], pb: list[int], sizes: list[int]) -> torch.Tensor:
    """Flat indices into the padded plane -> flat indices into the unpadded plane."""
    flat = torch.zeros_like(idx)
    rest = idx
    coords = []
    for size in reversed(padded):
        coords.append(rest % size)
        rest = rest // size
    for c, b, size in zip(reversed(coords), pb, sizes, strict=True):
        flat = flat * size + (c - b).clamp(0, size - 1)
    return flat


def global_window(node: Node) -> bool:
    """Whether the window covers the whole (static) input with no pads: a global pooling, one value a channel."""
    shape = node.get_input_partial_shape(0)
    if not shape.is_static or len(shape) < 3:
        return False
    sizes = [int(d) for d in shape.to_shape()[2:]]
    kernel, _, dilations, pb, pe, outs = node.resolved(sizes)
    return (list(kernel) == sizes and all(d == 1 for d in dilations) and not any(pb) and not any(pe)
            and all(o == 1 for o in outs))


def global_pool_kernel(node: Node) -> Kernel | None:
    """A global max or average pooling over 1-D or 3-D windows as ATen's reduction (``amax`` / ``mean``): its
    windowed kernels (and oneDNN's plain-layout pooling) loop over a 508-wide window at a fraction of a
    reduction's speed (400 us against ~20 for ``[1, 512, 508]``). 2-D ones keep oneDNN's pooling (channels-last,
    in native segments)."""
    if not global_window(node) or spatial_count(node) == 2 or not float_node(node, 1):
        return None
    if node.type_name == "MaxPool" and node.get_output_size() > 1 and node.output(1).get_target_inputs():
        return None
    dims = tuple(range(2, spatial_count(node) + 2))
    reduce = torch.amax if node.type_name == "MaxPool" else torch.mean
    unread = [None] * (node.get_output_size() - 1)

    def run(inputs: list) -> list:
        return [to_numpy(reduce(strided_torch(inputs[0]), dim=dims, keepdim=True)), *unread]

    return Kernel(run, f"aten_global_{'max' if node.type_name == 'MaxPool' else 'avg'}_pool")


@cpu_kernel("MaxPool")
def max_pool(node: Node) -> Kernel | None:
    direct = global_pool_kernel(node) or dnnl_pool_kernel(node)
    if direct is not None:
        return direct
    n = spatial_count(node)
    if n not in _MAX or not float_node(node, 1) or node.rounding_type not in ("floor", "ceil_torch"):
        return None
    pool = _MAX[n]
    index_dtype = torch.int32 if node.index_element_type.get_type_name() == "i32" else torch.int64
    rank = n + 2
    axis = node.axis + rank if node.axis < 0 else node.axis
    two_outputs = node.get_output_size() > 1  # MaxPool-1 has no indices output
    wants_indices = two_outputs and bool(node.output(1).get_target_inputs())
    keep_cl = keeps_channels_last(node)  # channels-last in and out between convolutions (see _layout)

    def run(inputs: list) -> list:
        x = to_torch(inputs[0]) if wants_indices else strided_torch(inputs[0])
        shape = list(x.shape)
        sizes = shape[2:]
        kernel, strides, dilations, pb, pe, _ = node.resolved(sizes)
        padding = aten_padding(pb, pe, kernel, dilations)
        padded = None
        if padding is None:
            if node.rounding_type != "floor":
                return node.evaluate(inputs)
            x = F.pad(x, torch_pad(pb, pe), value=float("-inf"))
            padded, padding = list(x.shape[2:]), [0] * n
        ceil = node.rounding_type == "ceil_torch"
        if not wants_indices:  # nobody reads output 1: skip computing it
            y = pool(x, kernel, strides, padding, dilations, ceil)
            return [strided_numpy(y) if keep_cl else to_numpy(y.contiguous())] + [None] * two_outputs
        y, idx = pool(x, kernel, strides, padding, dilations, ceil, return_indices=True)
        if padded is not None:
            idx = unpad_indices(idx, padded, pb, sizes)
        if axis < 2:
            idx = idx + plane_offsets(shape, axis)
        return [to_numpy(y), idx.to(index_dtype).numpy()]

    return Kernel(run, f"aten_max_pool{n}d")


@cpu_kernel("AvgPool")
def avg_pool(node: Node) -> Kernel | None:
    direct = global_pool_kernel(node) or dnnl_pool_kernel(node)
    if direct is not None:
        return direct
    n = spatial_count(node)
    if n not in _AVG or not float_node(node, 1) or node.rounding_type not in ("floor", "ceil_torch"):
        return None
    pool = _AVG[n]
    include_pad = not node.exclude_pad

    def run(inputs: list) -> list:
        x = strided_torch(inputs[0])  # a channels-last input (after a convolution) is read without a copy
        kernel, strides, dilations, pb, pe, _ = node.resolved(list(x.shape[2:]))
        padding = aten_padding(pb, pe, kernel, dilations)
        if padding is None:
            return node.evaluate(inputs)
        y = pool(x, kernel, strides, padding, node.rounding_type == "ceil_torch", include_pad)
        return [to_numpy(y.contiguous())]

    return Kernel(run, f"aten_avg_pool{n}d")
