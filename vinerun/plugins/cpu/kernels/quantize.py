"""Per-tensor QuantizeLinear and DequantizeLinear (the model's input into the first int8 layer, int8 results out
to f32 ops) as one oneDNN reorder with a scale and a zero point: one pass, rounding half to even and
saturating as the reference does, laid out channels-last where the readers take that (the first int8
convolution; NCHW f32 data into channels-last runs :mod:`.planes`' C kernel, faster for an image's few channels).
Per-axis and blocked forms run the reference; an array in another layout than planned runs the same arithmetic in
PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.ir.core_ops import Constant
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import (
    ARG_DST,
    ARG_SRC,
    LAYOUT_TYPES,
    PrimitiveCache,
    data_address,
    library,
    optimized_impl,
)
from vinerun.plugins.cpu.kernels._dnnl_ops import Reorder
from vinerun.plugins.cpu.kernels._layout import strided_torch
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    OutputLayout,
    ValueLayout,
    arriving_layout,
    element_layout,
    output_layout,
)
from vinerun.plugins.cpu.kernels._torch import strided_numpy
from vinerun.plugins.cpu.kernels.planes import PlanesToChannelsLast
from vinerun.transformations.low_precision.params import (
    ChannelQuantization,
    Quantization,
    activation_params,
    channel_params,
)

#: input layouts past the planned one a node makes reorders for (then the PyTorch path)
LAYOUTS = 3


def _torch_quantize(x: np.ndarray, q: Quantization) -> np.ndarray:
    lo, hi = q.limits
    dtype = torch.uint8 if q.dtype == np.uint8 else torch.int8
    t = strided_torch(np.asarray(x, np.float32))
    return strided_numpy(torch.round(t / np.float32(q.scale)).add_(q.zero_point).clamp_(lo, hi).to(dtype))


def _torch_dequantize(x: np.ndarray, q: Quantization) -> np.ndarray:
    return strided_numpy(strided_torch(np.asarray(x)).to(torch.float32).sub_(q.zero_point).mul_(np.float32(q.scale)))


def _reorder_kernel(node: Any, q: Quantization | ChannelQuantization, quantize: bool) -> Kernel | None:
    """The reorder form for a static shape (else None): source laid out as it most likely arrives. Per-channel
    parameters: scales along axis 1 (oneDNN's scale mask), one zero point shared by all channels."""
    lib = library()
    shape = node.get_input_partial_shape(0)
    if lib is None or not shape.is_static:
        return None
    dims = tuple(int(d) for d in shape.to_shape())
    if not dims or 0 in dims:
        return None
    src_dt = np.dtype(node.get_input_element_type(0).to_dtype())
    dst_dt = np.dtype(node.get_output_element_type(0).to_dtype())
    if src_dt.name not in LAYOUT_TYPES or dst_dt.name not in LAYOUT_TYPES:
        return None
    src: ValueLayout = arriving_layout(node, 0, dims, src_dt)
    out: OutputLayout = output_layout(node, dims, dst_dt)
    arg = ARG_DST if quantize else ARG_SRC
    if isinstance(q, ChannelQuantization):
        if q.common_zero_point is None or len(dims) < 2:
            return None
        attrs = {"scales": {arg: (2, q.scales)}, "zero_points": {arg: q.common_zero_point or 0}}
    else:
        attrs = {"scales": {arg: (0, np.float32([q.scale]))}, "zero_points": {arg: q.zero_point}}
    reorder: Reorder | PlanesToChannelsLast
    if quantize and isinstance(q, Quantization) and PlanesToChannelsLast.takes(src, out.value):
        reorder = PlanesToChannelsLast(lib, dims, q)
    else:
        reorder = Reorder(lib, element_layout(src), element_layout(out.value), **attrs)
    impl = optimized_impl(reorder, torch.get_num_threads())
    if impl is None:
        return None

    def make(layout: ValueLayout) -> Reorder | None:
        """The reorder from another layout the input arrives in (a guess of channels-last that was wrong: a
        head-split attention tensor), as long as oneDNN can read it (positive element strides)."""
        shape, strides, dtype = layout
        if shape != dims or dtype != src_dt or any(st <= 0 or st % dtype.itemsize for st in strides):
            return None
        return Reorder(lib, element_layout(layout), element_layout(out.value), **attrs)

    others = PrimitiveCache(make, LAYOUTS)

    def reorder_for(layout: ValueLayout) -> Reorder | PlanesToChannelsLast | None:
        return reorder if layout == src else others.get(layout)

    threads = torch.get_num_threads
    fallback = _torch_quantize if quantize else _torch_dequantize

    def run(inputs: list) -> list:
        x = inputs[0]
        op = reorder_for((x.shape, x.strides, x.dtype)) if isinstance(x, np.ndarray) else None
        if op is None:
            return [fallback(x, q) if isinstance(q, Quantization) else node.evaluate(inputs)[0]]
        y = out.empty()
        op(threads(), data_address(x), data_address(y))
        return [y]

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        layout = layouts[0] or src
        op = reorder_for(layout)
        return None if op is None else NativeStep(op, lambda t: t, [Buffer(False, 0, layout),
                                                                    Buffer(True, 0, out.value)])

    kernel = Kernel(run, "c_quantize" if isinstance(reorder, PlanesToChannelsLast) else
                    "onednn_quantize" if quantize else "onednn_dequantize")
    kernel.native = native
    kernel.impl = impl
    return kernel


@cpu_kernel("QuantizeLinear")
def quantize_kernel(node: Any) -> Kernel | None:
    q = activation_params(node)
    if node.get_input_element_type(0).get_type_name() != "f32" or node.saturate is False:
        return None
    if q is None:
        channels = channel_params(node)
        return None if channels is None else _reorder_kernel(node, channels, True)
    return _reorder_kernel(node, q, True) or Kernel(lambda inputs: [_torch_quantize(inputs[0], q)], "aten_quantize")


@cpu_kernel("DequantizeLinear")
def dequantize_kernel(node: Any) -> Kernel | None:
    q = activation_params(node)
    if node.get_output_element_type(0).get_type_name() != "f32" or isinstance(node.input_value(0).node, Constant):
        return None
    if q is None:
        channels = channel_params(node)
        return None if channels is None else _reorder_kernel(node, channels, False)
    return _reorder_kernel(node, q, False) or Kernel(lambda inputs: [_torch_dequantize(inputs[0], q)],
                                                    "aten_dequantize")
