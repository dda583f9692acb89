"""Int8 2-D convolutions (:class:`~vinerun.transformations.low_precision.QuantizedConvolution`) through oneDNN:
u8 / s8 data and s8 weights accumulate in s32 (VNNI's dot products on AVX512-VNNI / AVX-VNNI CPUs, AMX-INT8
where present, oneDNN's AVX2 int8 code elsewhere); the data scale and zero point, the per-channel weight
scales, the bias, the activations, a requantization, a residual sum of int8 data and the output's scale and
zero point are the primitive's attributes and post-ops, so a layer reads and writes int8 once.

A requantization inside the chain (a Q -> DQ pair before the residual sum) is rounding to that grid, as
eltwise post-ops: ``linear(1/s, zp) -> round -> clip(type range) -> linear(s, -zp s)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import (
    ARG_DST,
    ARG_SRC,
    ARG_WEIGHTS,
    ELTWISE,
    INT_TYPES,
    S8,
    Conv2d,
    data_address,
    library,
    optimized_impl,
)
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD, BINARY_MUL
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import Buffer, NativeFactory, NativeStep, ValueLayout, channels_last_value
from vinerun.plugins.cpu.kernels._torch import strided_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv_dnnl import prepare_one_thread
from vinerun.transformations.low_precision import Quantization, QuantizedLayer
from vinerun.transformations.low_precision.params import ChannelQuantization

F32_TYPE = 3


def rounding(q: Quantization) -> list[tuple]:
    """Eltwise post-ops that round a real value to ``q``'s grid and saturate (a Q -> DQ pair)."""
    lo, hi = q.limits
    s, z = q.scale, q.zero_point
    return [("eltwise", ELTWISE["linear"], 1.0 / s, float(z)), ("eltwise", ELTWISE["round"], 0.0, 0.0),
            ("eltwise", ELTWISE["clip"], float(lo), float(hi)), ("eltwise", ELTWISE["linear"], s, -z * s)]


def channel_rounding(q: ChannelQuantization, rank: int) -> list[tuple]:
    """Post-ops rounding to a per-channel (axis 1) grid and saturating: ``x / s + zp`` as binary post-ops with
    constant columns, ``round -> clip``, and back."""
    column = [1, -1] + [1] * (rank - 2)
    scales, zps = q.scales.astype(np.float32).reshape(column), q.zero_points.astype(np.float32).reshape(column)
    lo, hi = q.limits
    shift = [("binary", BINARY_ADD, zps)] if np.any(zps) else []
    unshift = [("binary", BINARY_ADD, -zps)] if np.any(zps) else []
    return [("binary", BINARY_MUL, (1.0 / scales).astype(np.float32)), *shift, ("eltwise", ELTWISE["round"], 0.0, 0.0),
            ("eltwise", ELTWISE["clip"], float(lo), float(hi)), *unshift, ("binary", BINARY_MUL, scales)]


def post_ops(layer: QuantizedLayer, dst_dtype: np.dtype, rank: int = 4) -> tuple[list[tuple], int | None] | None:
    """The layer's stages as oneDNN post-ops, and the input index of the residual summed into the destination
    (None without one); None where a stage has no exact form (a sum into a destination of another size).
    ``rank``: the destination's, as the primitive sees it (a constant operand is broadcast over it)."""
    ops: list[tuple] = []
    residual = None
    out = layer.output
    if isinstance(out, ChannelQuantization) and any(stage.kind == "sum" for stage in layer.stages):
        return None  # the sum's destination scale would be per channel too
    for stage in layer.stages:
        if stage.kind == "add":  # a constant per output channel, broadcast over the destination
            shape = [1] * rank
            shape[layer.channel_axis] = -1
            ops.append(("binary", BINARY_ADD, np.asarray(stage.operand, np.float32).reshape(shape)))
        elif stage.kind == "relu":
            ops.append(("eltwise", ELTWISE["relu"], 0.0, 0.0))
        elif stage.kind == "clamp":
            ops.append(("eltwise", ELTWISE["clip"], stage.low, stage.high))
        elif stage.kind == "requantize" and isinstance(stage.quantization, ChannelQuantization):
            ops.extend(channel_rounding(stage.quantization, rank))
        elif stage.kind == "requantize":
            ops.extend(rounding(stage.quantization))  # type: ignore[arg-type]
        else:
            q = stage.quantization
            assert q is not None  # noqa: S101 - a sum stage always has its quantization
            if q.dtype.itemsize != dst_dtype.itemsize:
                return None  # the residual is read in place of the destination: same size only (u8 / s8)
            ops.append(("sum", q.scale, q.zero_point, INT_TYPES[q.dtype.name]))
            residual = stage.index
    if isinstance(out, ChannelQuantization):  # 1 / scale and the zero point per channel; the destination rounds
        column = [1, -1] + [1] * (rank - 2)
        ops.append(("binary", BINARY_MUL, (1.0 / out.scales).astype(np.float32).reshape(column)))
        if np.any(out.zero_points):
            ops.append(("binary", BINARY_ADD, out.zero_points.astype(np.float32).reshape(column)))
    elif isinstance(out, Quantization) and out.zero_point:
        # the destination's zero point as a shift before its scale divides (y + z * s) / s = y / s + z: oneDNN's
        # brgconv / brgemm kernels (AMX, VNNI) take no destination zero point, and without them a layer fell to
        # jit_1x1 / jit (ResNet-50 QDQ's projection shortcuts: 294 -> ~200 us on AMX)
        ops.append(("eltwise", ELTWISE["linear"], 1.0, float(out.zero_point) * float(out.scale)))
    return ops, residual


def quantization_attributes(layer: QuantizedLayer, weight_mask: int) -> dict[str, Any]:
    """The scales and zero points of the primitive (oneDNN's int8 attributes)."""
    weights = layer.weights
    weight_scales = (0, np.float32([weights.scale])) if isinstance(weights, Quantization) else \
        (weight_mask, weights.scales)
    scales = {ARG_SRC: (0, np.float32([layer.input.scale])), ARG_WEIGHTS: weight_scales}
    zero_points = {ARG_SRC: layer.input.zero_point}
    if isinstance(layer.output, Quantization):  # its zero point is a post-op (post_ops)
        scales[ARG_DST] = (0, np.float32([layer.output.scale]))
    return {"scales": scales, "zero_points": zero_points}


@cpu_kernel("QuantizedConvolution")
def int8_conv_kernel(node: Any) -> Kernel | None:
    """oneDNN's int8 convolution for a 2-D QuantizedConvolution of static shape, or None (the reference)."""
    lib = library()
    layer: QuantizedLayer = node.layer
    head = layer.head
    out = node.get_output_partial_shape(0)
    xs = node.get_input_partial_shape(0)
    if lib is None or not out.is_static or not xs.is_static or len(out) != 4:
        return None
    src_dt = np.dtype(node.get_input_element_type(0).to_dtype())
    dst_dt = np.dtype(node.get_output_element_type(0).to_dtype())
    found = post_ops(layer, dst_dt)
    if found is None:
        return None
    ops, residual = found
    size, out_shape = tuple(int(d) for d in xs.to_shape()), tuple(int(d) for d in out.to_shape())
    w = layer.weights.values
    grouped = head.type_name == "GroupConvolution"
    groups = w.shape[0] if grouped else 1
    w_flat = w.reshape(-1, *w.shape[2:]) if grouped else w
    n_sp = len(size) - 2
    pads_begin, pads_end = head.explicit_pads(list(size[2:]), list(w_flat.shape[2:]))
    strides, dilations, _, _ = head.spatial_attrs(n_sp)
    types = (INT_TYPES[src_dt.name], INT_TYPES.get(dst_dt.name, F32_TYPE))
    conv = Conv2d(lib, w_flat, layer.bias, groups, size, out_shape, list(strides), list(dilations), list(pads_begin),
                  list(pads_end), ops, S8, types=types, **quantization_attributes(layer, 3 if grouped else 1))
    current = torch.get_num_threads()
    impl = optimized_impl(conv, (current, True))
    if impl is None:
        return None
    if current > 1:
        prepare_one_thread(lambda: conv.instance((1, True)))
    keep_cl = keeps_channels_last(node)
    n, o, oh, ow = out_shape
    cl_strides = channels_last_value(size, src_dt)[1]
    threads = torch.get_num_threads

    def run(inputs: list) -> list:
        x = inputs[0]
        if x.strides != cl_strides:
            x = strided_numpy(to_torch(np.ascontiguousarray(x)).contiguous(memory_format=torch.channels_last))
        y = np.empty((n, oh, ow, o), dst_dt)
        if residual is not None:  # its bytes (an s8 residual into a u8 destination: oneDNN reads them as s8)
            r = inputs[residual]
            np.copyto(y.view(r.dtype), r.transpose(0, 2, 3, 1))
        conv((threads(), True), data_address(x), data_address(y))
        y = y.transpose(0, 3, 1, 2)
        return [y if keep_cl else np.ascontiguousarray(y)]

    kernel = Kernel(run, "onednn_conv2d" + ("_sum" if residual is not None else "") + "_int8")
    if keep_cl:
        kernel.native = _native_form(conv, size, out_shape, src_dt, dst_dt, residual)
    kernel.impl = impl
    return kernel


def _native_form(conv: Conv2d, size: tuple[int, ...], out_shape: tuple[int, ...], src_dt: np.dtype,
                 dst_dt: np.dtype, residual: int | None) -> NativeFactory:
    """Inside a native segment: a channels-last int8 source and destination (the residual's memory with a sum)."""
    cl_in, out = channels_last_value(size, src_dt), channels_last_value(out_shape, dst_dt)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        if layouts[0] not in (None, cl_in):
            return None
        return NativeStep(conv, lambda threads: (threads, True), [Buffer(False, 0, cl_in), Buffer(True, 0, out)],
                          accumulate=residual)

    return native
