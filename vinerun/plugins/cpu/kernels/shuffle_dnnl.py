"""ShuffleChannels of a static 4-D f32 / bf16 tensor over its channels as one oneDNN reorder.

Channel ``i * (C / g) + j`` of the input is channel ``j * g + i`` of the output: seen as five dimensions
``[N, C / g, g, H, W]`` through the input's strides (``j`` steps one channel, ``i`` steps ``C / g`` channels) and
the output's (``j`` steps ``g`` channels, ``i`` one), the shuffle is a strided copy, whatever the layouts: a
channels-last convolution output is read as it is, and the result is channels-last where every reader takes
that (:func:`._native.output_layout`). In a native segment it is one step.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Reorder
from vinerun.plugins.cpu.kernels._native import ValueLayout, output_layout, single_primitive_kernel

#: input layouts a node makes reorders for
LAYOUTS = 4


def split_channels(layout: ValueLayout, group: int, outer_first: bool) -> tuple:
    """``layout`` (``[N, C, H, W]``) as oneDNN's ``[N, C / g, g, H, W]`` (dims, element strides, type):
    ``outer_first`` (the input) with channel ``i * (C / g) + j`` at ``(j, i)``, else (the output) ``j * g + i``."""
    (n, c, h, w), strides, dtype = layout
    sn, sc, sh, sw = (s // dtype.itemsize for s in strides)
    per = c // group
    j_step, i_step = (sc, sc * per) if outer_first else (sc * group, sc)
    return (n, per, group, h, w), (sn, j_step, i_step, sh, sw), DATA_TYPES[dtype.name]


@cpu_kernel("ShuffleChannels")
def dnnl_shuffle_channels(node: Node) -> Kernel | None:
    """The kernel for a ShuffleChannels over axis 1 of a static f32 / bf16 rank-4 tensor, or None (the reference
    runs)."""
    lib = library()
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    xs = node.get_input_partial_shape(0)
    if lib is None or dtype.name not in DATA_TYPES or not xs.is_static or len(xs) != 4:
        return None
    if node.axis % 4 != 1:  # type: ignore[attr-defined]
        return None
    shape = tuple(int(d) for d in xs.to_shape())
    group = int(node.group)  # type: ignore[attr-defined]
    if 0 in shape or group < 1 or shape[1] % group:
        return None
    out = output_layout(node, shape, dtype)

    def shuffle(x: ValueLayout) -> Reorder:
        return Reorder(lib, split_channels(x, group, True), split_channels(out.value, group, False))

    reference = node.evaluate
    return single_primitive_kernel(node, shape, out, shuffle, lambda inputs: [np.ascontiguousarray(
        reference(inputs)[0])], "onednn_shuffle_channels", LAYOUTS)
