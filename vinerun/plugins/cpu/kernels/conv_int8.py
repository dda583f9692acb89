"""Int8 2-D convolutions (:class:`~vinerun.transformations.low_precision.QuantizedConvolution`) through oneDNN:
u8 / s8 data and s8 weights accumulate in s32 (VNNI's dot products on AVX512-VNNI / AVX-VNNI CPUs, AMX-INT8
where present, oneDNN's AVX2 int8 code elsewhere); the data scale and zero point, the per-channel weight
scales, the bias, the activations, a requantization, a residual sum of int8 data and the output's scale and
zero point are the primitive's attributes and post-ops (:mod:`.int8_epilogue`, which keeps them few), so a layer
reads and writes int8 once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import INT_TYPES, S8, Conv2d, data_address, library, optimized_impl
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import Buffer, NativeFactory, NativeStep, ValueLayout, channels_last_value
from vinerun.plugins.cpu.kernels._torch import strided_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv_dnnl import prepare_one_thread
from vinerun.plugins.cpu.kernels.int8_epilogue import epilogue
from vinerun.transformations.low_precision import QuantizedLayer

F32_TYPE = 3


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
    ep = epilogue(layer, dst_dt)
    if ep is None:
        return None
    residual = ep.residual
    size, out_shape = tuple(int(d) for d in xs.to_shape()), tuple(int(d) for d in out.to_shape())
    w = layer.weights.values
    grouped = head.type_name == "GroupConvolution"
    groups = w.shape[0] if grouped else 1
    w_flat = w.reshape(-1, *w.shape[2:]) if grouped else w
    n_sp = len(size) - 2
    pads_begin, pads_end = head.explicit_pads(list(size[2:]), list(w_flat.shape[2:]))
    strides, dilations, _, _ = head.spatial_attrs(n_sp)
    if not any(pads_begin) and not any(pads_end):  # no padding to stand for the source zero point
        ep = ep.without_source_zero_point(layer, w_flat.reshape(w_flat.shape[0], -1).sum(axis=1, dtype=np.int64))
    types = (INT_TYPES[src_dt.name], INT_TYPES.get(dst_dt.name, F32_TYPE))
    conv = Conv2d(lib, w_flat, ep.bias, groups, size, out_shape, list(strides), list(dilations), list(pads_begin),
                  list(pads_end), ep.ops, S8, types=types, **ep.attributes(layer, 3 if grouped else 1))
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
