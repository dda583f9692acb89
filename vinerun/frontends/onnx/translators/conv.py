"""ONNX Conv, ConvTranspose and DeformConv -> (Group)Convolution[BackpropData] / DeformableConvolution.

As OpenVINO's ONNX frontend does: a bias becomes an Add of the bias reshaped to ``[1, C, 1, ...]``;
``group > 1`` becomes the Group* op with the filters reshaped to ``[G, O / G, I / G, *K]``.
Also home of the helpers the pooling and normalization translators share.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vinerun.errors import UnsupportedOpError
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output
from vinerun.ir.registry import get_op_class
from vinerun.ops.arithmetic import Add
from vinerun.ops.conv_backprop import ConvolutionBackpropData, GroupConvolutionBackpropData
from vinerun.ops.convolution import Convolution, GroupConvolution
from vinerun.ops.deformable_conv import DeformableConvolution

_AUTO_PAD = {"NOTSET": "explicit", "SAME_UPPER": "same_upper", "SAME_LOWER": "same_lower", "VALID": "valid"}


# --- helpers shared by the nn translators -----------------------------------------------------
def auto_pad(ctx) -> str:
    value = ctx.attr("auto_pad", "NOTSET")
    if value not in _AUTO_PAD:
        raise ctx.unsupported(f"auto_pad '{value}' is not one of {', '.join(_AUTO_PAD)}")
    return _AUTO_PAD[value]


def spatial_rank(ctx, *candidates: Output) -> int:
    """Number of spatial axes, from the first candidate with a static rank (or ``kernel_shape``)."""
    for out in candidates:
        if out is not None and out.partial_shape.rank.is_static:
            return out.partial_shape.rank.get_length() - 2
    if ctx.has_attr("kernel_shape"):
        return len(ctx.attr("kernel_shape"))
    raise ctx.unsupported("the input rank must be known (or kernel_shape given)")


def window_attrs(ctx, n: int) -> dict:
    """strides, dilations, pads_begin, pads_end, auto_pad from the ONNX attributes."""
    pads = ctx.attr("pads", [0] * (2 * n))
    if len(pads) != 2 * n:
        raise ctx.unsupported(f"pads has {len(pads)} values, expected {2 * n}")
    return {"strides": ctx.attr("strides", [1] * n), "dilations": ctx.attr("dilations", [1] * n),
            "pads_begin": pads[:n], "pads_end": pads[n:], "auto_pad": auto_pad(ctx)}


def static_dims(out: Output) -> list[int] | None:
    ps = out.partial_shape
    return None if ps.is_dynamic else [int(d) for d in ps.to_shape()]


def reshape(out: Output, shape: Sequence[int]) -> Output:
    """``out`` reshaped to ``shape`` (may hold one -1): folded for constants, else a Reshape op."""
    if isinstance(out.node, Constant):
        return Constant(out.node.get_value().reshape(list(shape))).output(0)
    reshape_op = get_op_class("Reshape", "opset1")
    return reshape_op(out, Constant(np.array(shape, dtype=np.int64)).output(0), special_zero=False).output(0)


def per_channel(out: Output, rank: int) -> Output:
    """A ``[C]`` vector as ``[1, C, 1, ...]`` for a rank-``rank`` ``[N, C, *S]`` tensor."""
    return reshape(out, [1, -1] + [1] * (rank - 2))


def add_bias(ctx, out: Output, bias_index: int, rank: int) -> Output:
    bias = ctx.optional_input(bias_index)
    return out if bias is None else Add(out, per_channel(bias, rank)).output(0)


def grouped_filters(ctx, w: Output, group: int) -> Output:
    """``[A, B, *K]`` filters as ``[group, A / group, B, *K]``."""
    dims = static_dims(w)
    if dims is None:
        raise UnsupportedOpError(f"ONNX node '{ctx.name}' ({ctx.op_type}): grouped filters need a static shape, "
                                 f"got {w.partial_shape}")
    return reshape(w, [group, -1, *dims[1:]])


# --- translators ------------------------------------------------------------------------------
@onnx_op("Conv")
def conv(ctx):
    x, w = ctx.input(0), ctx.input(1)
    n = spatial_rank(ctx, x, w)
    attrs = window_attrs(ctx, n)
    group = ctx.attr("group", 1)
    if group == 1:
        out = Convolution(x, w, **attrs).output(0)
    else:
        out = GroupConvolution(x, grouped_filters(ctx, w, group), **attrs).output(0)
    if ctx.has_input(2):  # openvino's name for the convolution before its bias (a fused one keeps it, so both
        out.node.set_friendly_name(f"{ctx.name}/WithoutBiases")  # runtimes' profiles name the layer alike)
    return add_bias(ctx, out, 2, n + 2)


def transposed_pads(ctx, sizes: list[int], kernel: list[int], attrs: dict, output_padding: list[int]
                    ) -> tuple[list[int], list[int]]:
    """ONNX's pads for ConvTranspose with ``output_shape`` or SAME auto_pad (extra at the end only for
    SAME_UPPER)."""
    n = len(sizes)
    strides, dilations = attrs["strides"], attrs["dilations"]
    wanted = ctx.attr("output_shape", None)
    wanted = wanted[-n:] if wanted else [s * st for s, st in zip(sizes, strides, strict=False)]
    pb, pe = [], []
    for i in range(n):
        total = strides[i] * (sizes[i] - 1) + output_padding[i] + dilations[i] * (kernel[i] - 1) + 1 - wanted[i]
        small = total // 2
        begin = small if attrs["auto_pad"] == "same_upper" else total - small
        pb.append(begin)
        pe.append(total - begin)
    return pb, pe


@onnx_op("ConvTranspose")
def conv_transpose(ctx):
    x, w = ctx.input(0), ctx.input(1)
    n = spatial_rank(ctx, x, w)
    attrs = window_attrs(ctx, n)
    attrs["output_padding"] = ctx.attr("output_padding", [0] * n)
    group = ctx.attr("group", 1)
    wants_shape = ctx.has_attr("output_shape") or attrs["auto_pad"] in ("same_upper", "same_lower")
    if wants_shape:
        xd, wd = static_dims(x), static_dims(w)
        kernel = ctx.attr("kernel_shape", None) or (wd[2:] if wd else None)
        if xd is None or kernel is None:
            raise ctx.unsupported("output_shape / SAME padding needs static input and kernel shapes")
        attrs["pads_begin"], attrs["pads_end"] = transposed_pads(ctx, xd[2:], kernel, attrs, attrs["output_padding"])
        attrs["auto_pad"] = "explicit"
    elif attrs["auto_pad"] == "valid":
        attrs["pads_begin"], attrs["pads_end"], attrs["auto_pad"] = [0] * n, [0] * n, "explicit"
    if group == 1:
        out = ConvolutionBackpropData(x, w, **attrs).output(0)
    else:
        out = GroupConvolutionBackpropData(x, grouped_filters(ctx, w, group), **attrs).output(0)
    return add_bias(ctx, out, 2, n + 2)


@onnx_op("DeformConv", since=19)
def deform_conv(ctx):
    x, w, offsets = ctx.input(0), ctx.input(1), ctx.input(2)
    n = spatial_rank(ctx, x, w)
    if n != 2:
        raise ctx.unsupported(f"only 2-D deformable convolution is supported, got {n} spatial axes")
    attrs = window_attrs(ctx, n)
    inputs = [x, offsets, w] + ([ctx.input(4)] if ctx.has_input(4) else [])
    out = DeformableConvolution(inputs, group=ctx.attr("group", 1), deformable_group=ctx.attr("offset_group", 1),
                                bilinear_interpolation_pad=True, **attrs).output(0)
    return add_bias(ctx, out, 3, n + 2)
