"""2-D (Group)ConvolutionBackpropData as oneDNN's deconvolution (:class:`._dnnl.Deconv2d`), f32 and bf16.

ATen's ``conv_transpose2d`` takes oneDNN's deconvolution only for channels-last data and in f32; a U-Net's
decoder ran it with a Convert to f32 before and after each one in bf16, and its bias Add outside the native segment
(four 2x2 stride-2 upsamplings: 5.7 ms of ATen, 4 ms of Adds, the Converts). Here the primitive is made at compile
time like a convolution's (:func:`.conv_dnnl.dnnl_conv_kernel`: channels-last in and out, in native segments):
OpenVINO's filters ``[C, O, k...]`` (``[G, C / G, O / G, k...]``) transposed to oneDNN's ``[O, C, k...]``, its
output padding taken off the end pads. Static shapes, constant filters and output shape only.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, Deconv2d, DnnlError, library
from vinerun.plugins.cpu.kernels.conv_dnnl import dnnl_conv_kernel
from vinerun.plugins.cpu.kernels.fused_conv import _Parts


def dnnl_deconv_kernel(node: Node) -> Kernel | None:
    """The oneDNN kernel for a static 2-D (Group)ConvolutionBackpropData, or None (ATen's path runs)."""
    xs, ys = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    w = node.const_input(1)
    dt = node.get_input_element_type(0).to_dtype()
    if (library() is None or w is None or not xs.is_static or not ys.is_static or len(xs) != 4
            or dt.name not in DATA_TYPES or (node.get_input_size() > 2 and node.const_input(2) is None)):
        return None
    size = [int(d) for d in xs.to_shape()]
    grouped = node.type_name == "GroupConvolutionBackpropData"
    w = np.asarray(w)
    if grouped:  # [G, C / G, O / G, k...] -> [G * O / G, C / G, k...]
        groups = w.shape[0]
        filters = w.transpose(0, 2, 1, 3, 4).reshape(-1, w.shape[1], *w.shape[3:])
    else:  # [C, O, k...] -> [O, C, k...]
        groups, filters = 1, w.transpose(1, 0, 2, 3)
    out_shape = node.const_input(2) if node.get_input_size() > 2 else None
    strides, dilations, pb, pe, op = node.resolve(size[2:], list(w.shape[-2:]), out_shape)  # type: ignore[attr-defined]
    pr = [e - o for e, o in zip(pe, op, strict=True)]
    if min(pb) < 0 or min(pr) < 0:
        return None  # oneDNN's deconvolution pads, it does not crop beyond the output
    try:
        return dnnl_conv_kernel(node, _Parts(node), np.ascontiguousarray(filters), groups, size, list(pb), pr,
                                list(strides), list(dilations), primitive=Deconv2d)
    except DnnlError:
        return None  # a geometry oneDNN's deconvolution does not take
