"""f32 <-> bf16 Convert through a oneDNN reorder (:class:`._dnnl_ops.Reorder`), made at compile time.

These are the conversions the precision pass puts at the borders of bf16 regions. A reorder rounds to
nearest-even as ATen and the reference do; it also lays the result out channels-last where every reader
takes that (a model input going to the first convolution: one pass instead of a conversion and a
transposition; an NCHW f32 image into channels-last bf16 runs :mod:`.planes`' C kernel, faster for its few
channels), and, unlike an ATen op, runs warm between oneDNN kernels. It reads a channels-last input as it is
(:func:`._layout.reads_channels_last_convert`): a bf16 segmentation head's last convolution or resize hands its
channels-last result to the f32 model output through one reorder, as openvino's does, instead of writing NCHW
itself (oneDNN's NCHW linear resampling of LR-ASPP's logits: 2.0 ms in bf16; channels-last 0.2 ms).
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, PrimitiveCache, data_address, library, optimized_impl
from vinerun.plugins.cpu.kernels._dnnl_ops import Reorder, channels_last, dense
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    channels_last_value,
    dense_value,
    layout_of_value,
)
from vinerun.plugins.cpu.kernels._torch import BF16
from vinerun.plugins.cpu.kernels.planes import PlanesToChannelsLast

_PAIRS = {("f32", "bf16"), ("bf16", "f32")}


def dnnl_convert_kernel(node: Node) -> Kernel | None:
    """The kernel for an f32 <-> bf16 Convert of static shape, or None."""
    lib = library()
    src_type, dst_type = node.get_input_element_type(0), node.get_output_element_type(0)
    shape = node.get_input_partial_shape(0)
    if lib is None or (src_type.get_type_name(), dst_type.get_type_name()) not in _PAIRS or not shape.is_static:
        return None
    dims = tuple(int(d) for d in shape.to_shape())
    if not dims or 0 in dims:
        return None
    src_dt, dst_dt = np.dtype(src_type.to_dtype()), np.dtype(dst_type.to_dtype())
    keep_cl = keeps_channels_last(node)
    if keep_cl:
        n, c, h, w = dims
        out_shape, out = (n, h, w, c), channels_last(dims, DATA_TYPES[dst_dt.name])
    else:
        out_shape, out = dims, dense(dims, DATA_TYPES[dst_dt.name])
    x_value = dense_value(dims, src_dt)
    y_value = channels_last_value(dims, dst_dt) if keep_cl else dense_value(dims, dst_dt)
    reorder: Reorder | PlanesToChannelsLast
    if dst_dt == BF16 and PlanesToChannelsLast.takes(x_value, y_value):  # an image input into a bf16 model
        reorder = PlanesToChannelsLast(lib, dims, None)
    else:
        reorder = Reorder(lib, dense(dims, DATA_TYPES[src_dt.name]), out)
    impl = optimized_impl(reorder, torch.get_num_threads())
    if impl is None:
        return None
    threads = torch.get_num_threads
    # a channels-last input (takes_channels_last): its own reorder, made at its first use
    cl_value = channels_last_value(dims, src_dt) if len(dims) == 4 else None
    from_cl = PrimitiveCache(lambda _: Reorder(lib, channels_last(dims, DATA_TYPES[src_dt.name]), out), 1)

    def run(inputs: list) -> list:
        x = inputs[0]
        op = from_cl.get(cl_value) if cl_value is not None and layout_of_value(x) == cl_value else None
        if op is None:
            x, op = np.ascontiguousarray(x, src_dt), reorder
        y = np.empty(out_shape, dst_dt)
        op(threads(), data_address(x), data_address(y))
        return [y.transpose(0, 3, 1, 2) if keep_cl else y]

    def native(layouts: list) -> NativeStep | None:
        if layouts[0] in (None, x_value):
            return NativeStep(reorder, lambda t: t, [Buffer(False, 0, x_value), Buffer(True, 0, y_value)])
        op = from_cl.get(cl_value) if layouts[0] == cl_value else None
        if op is None:
            return None
        return NativeStep(op, lambda t: t, [Buffer(False, 0, cl_value), Buffer(True, 0, y_value)])

    kernel = Kernel(run, "c_convert" if isinstance(reorder, PlanesToChannelsLast) else "onednn_reorder")
    kernel.native = native
    kernel.impl = impl
    return kernel
