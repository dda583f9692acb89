"""FusedConvolutionDW: a 1x1 convolution with the 3x3 depthwise convolution after it as oneDNN's ``dw``
post-op, one primitive (see :class:`~vinerun.plugins.cpu.fused_ops.FusedConvolutionDW`).

oneDNN computes the 1x1 output a few rows at a time and runs the depthwise convolution on them while they are
in cache. Its 1x1 kernels take the post-op only where that pays (the 1x1 output larger than the L2 cache);
elsewhere it offers a reference composition (``ref_fused_convolution``), and :func:`fuses` says no.
MobileNetV2's 112x112 expansion (1x16x112x112 -> 96 channels, then a stride-2 depthwise convolution): 701 ->
489 us at 1 thread inside a chain of its layers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, Conv2d, DepthwisePostOp, DnnlError, library
from vinerun.plugins.cpu.kernels.conv_dnnl import conv_bias, conv_post_ops, dnnl_conv_kernel
from vinerun.plugins.cpu.kernels.fused_conv import _Parts

#: reads a node's input ``i`` as a constant (None when it is not one)
ConstantInput = Callable[[int], "np.ndarray | None"]


def _static_4d(node: Node) -> tuple[list[int], list[int]] | None:
    """(input 0 shape, output shape) of a 2-D convolution of static shape."""
    x, y = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    if not (x.is_static and y.is_static) or len(x.to_shape()) != 4:
        return None
    return [int(d) for d in x.to_shape()], [int(d) for d in y.to_shape()]


def pointwise_filters(pw: Node, const: ConstantInput) -> np.ndarray | None:
    """The [O, C, 1, 1] filters of ``pw`` when it is a 1x1 FusedConvolution oneDNN can run with a depthwise
    post-op (stride 1, no pads, no residual sum, activations oneDNN has), else None."""
    shapes = _static_4d(pw)
    if getattr(pw, "conv_type", None) != "Convolution" or shapes is None:
        return None
    size = shapes[0]
    w = const(1)
    if w is None or w.shape != (w.shape[0], size[1], 1, 1):
        return None
    strides, dilations, _, _ = pw.spatial_attrs(2)
    pb, pe = pw.explicit_pads(size[2:], [1, 1])
    parts = _Parts(pw)
    if strides != [1, 1] or dilations != [1, 1] or pb != [0, 0] or pe != [0, 0] or parts.sum_index is not None:
        return None
    if conv_post_ops(parts) is None or (parts.bias_index is not None and const(parts.bias_index) is None):
        return None
    return w


def depthwise_post_op(dw: Node, const: ConstantInput) -> DepthwisePostOp | None:
    """``dw`` as oneDNN's depthwise post-op, or None where it does not fit: constant [C, 1, 1, 3, 3] filters,
    stride 1 or 2 on both axes, no dilation, one row and column of padding before, an output of
    ceil(input / stride) (the size oneDNN derives), a constant bias, no residual sum, activations oneDNN has."""
    shapes = _static_4d(dw)
    if getattr(dw, "conv_type", None) != "GroupConvolution" or shapes is None:
        return None
    size, out = shapes
    c = size[1]
    w = const(1)
    if w is None or w.shape != (c, 1, 1, 3, 3) or out[1] != c:
        return None
    strides, dilations, _, _ = dw.spatial_attrs(2)
    pb, _ = dw.explicit_pads(size[2:], [3, 3])
    s = strides[0]
    if strides != [s, s] or s not in (1, 2) or dilations != [1, 1] or pb != [1, 1]:
        return None
    if out[2:] != [-(-d // s) for d in size[2:]]:
        return None
    parts = _Parts(dw)
    post = conv_post_ops(parts)
    if parts.sum_index is not None or post is None:
        return None
    bias = np.zeros(c, np.float32)
    if parts.bias_index is not None:
        b = const(parts.bias_index)
        if b is None:
            return None
        bias = np.ascontiguousarray(np.broadcast_to(b.reshape(-1), (c,)), np.float32)
    return DepthwisePostOp(np.ascontiguousarray(w, np.float32), bias, s, 1, tuple(post))


def fuses(pw: Node, dw: Node, threads: int) -> bool:
    """Whether oneDNN runs the 1x1 ``pw`` and the depthwise ``dw`` after it as one fused primitive at
    ``threads`` (not its reference composition), both f32 or both bf16."""
    lib = library()
    dt = pw.get_input_element_type(0).to_dtype()
    if lib is None or dt.name not in DATA_TYPES or any(
            t.to_dtype() != dt for t in (pw.get_output_element_type(0), dw.get_output_element_type(0))):
        return False
    w = pointwise_filters(pw, pw.const_input)
    dw_op = depthwise_post_op(dw, dw.const_input)
    if w is None or dw_op is None:
        return False
    size = [int(d) for d in pw.get_input_partial_shape(0).to_shape()]  # static: both checks passed
    out = [int(d) for d in dw.get_output_partial_shape(0).to_shape()]
    parts = _Parts(pw)
    conv = Conv2d(lib, w, conv_bias(pw, parts, w.shape[0]), 1, tuple(size), tuple(out), [1, 1], [1, 1], [0, 0],
                  [0, 0], conv_post_ops(parts) or [], DATA_TYPES[dt.name], depthwise=dw_op)
    try:
        return not conv.planned_impl((threads, True)).startswith("ref")
    except DnnlError:  # oneDNN refuses the combination: leave the pair apart
        return False


@cpu_kernel("FusedConvolutionDW")
def fused_convolution_dw(node: Any) -> Kernel | None:
    w = pointwise_filters(node.pointwise, node.const_input)  # the 1x1 node's inputs are this node's
    dw_op = depthwise_post_op(node.depthwise, lambda i: node.const_input(node.depthwise_input(i)))
    if w is None or dw_op is None:
        return None
    size = [int(d) for d in node.get_input_partial_shape(0).to_shape()]
    return dnnl_conv_kernel(node, _Parts(node.pointwise), w, 1, size, [0, 0], [0, 0], [1, 1], [1, 1],
                            depthwise=dw_op)
