"""f32 and bf16 2-D MaxPool / AvgPool through the direct oneDNN binding (:class:`._dnnl_ops.Pooling`).

Between oneDNN convolutions ATen's pooling costs several times its own work: its code is cold after the
oneDNN kernels (measured 130 us for MobileNetV2's global average pool that takes 8 us alone; 70 us in f32). Here the
primitive is made at compile time, for a channels-last or an NCHW source (the one each call gets), with
the output channels-last where every reader takes that (:mod:`._layout`). Only windows oneDNN computes as
the reference does: static shapes, pads that give the node's output size (no ``ceil`` extension), no MaxPool
indices read.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import BF16, DATA_TYPES, S8, U8, data_address, library, optimized_impl
from vinerun.plugins.cpu.kernels._dnnl_ops import (
    POOL_AVG_EXCLUDE,
    POOL_AVG_INCLUDE,
    POOL_MAX,
    Pooling,
    channels_last,
    dense,
)
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import Buffer, NativeStep, channels_last_value, dense_value
from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16
from vinerun.plugins.cpu.kernels.conv_dnnl import prepare_one_thread


def _geometry(node: Any, sizes: list[int], outs: list[int]) -> tuple[list[int], ...] | None:
    """(kernel, strides, dilations, pads begin, pads end) when they give ``outs`` exactly, else None."""
    kernel, strides, dilations, pb, pe, resolved = node.resolved(sizes)
    if resolved != outs:
        return None
    for s, k, st, d, b, e, o in zip(sizes, kernel, strides, dilations, pb, pe, outs, strict=True):
        if (s + b + e - (k - 1) * d - 1) // st + 1 != o or min(b, e) < 0:
            return None
    return kernel, strides, dilations, pb, pe


def dnnl_pool_kernel(node: Node) -> Kernel | None:
    """The kernel for a 2-D MaxPool (f32, bf16, int8; output 1 unread) or AvgPool of static shape, or None."""
    lib = library()
    xs, ys = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    dt = DATA_TYPES.get(dtype.name)
    if node.type_name == "MaxPool" and dtype.name in ("uint8", "int8"):
        dt = U8 if dtype.name == "uint8" else S8  # int8 data between int8 layers (low_precision's propagation)
    if (lib is None or dt is None or not xs.is_static or not ys.is_static or len(xs) != 4
            or (dt == BF16 and not mkldnn_bf16())):
        return None
    if node.type_name == "MaxPool" and node.get_output_size() > 1 and node.output(1).get_target_inputs():
        return None
    src, dst = tuple(int(d) for d in xs.to_shape()), tuple(int(d) for d in ys.to_shape())
    geometry = _geometry(node, list(src[2:]), list(dst[2:]))
    if geometry is None:
        return None
    kernel, strides, dilations, pb, pe = geometry
    algorithm = POOL_MAX if node.type_name == "MaxPool" else (
        POOL_AVG_EXCLUDE if node.exclude_pad else POOL_AVG_INCLUDE)  # type: ignore[attr-defined]
    keep_cl = keeps_channels_last(node)
    # oneDNN's fast pooling keeps the source's layout: a channels-last result goes NCHW by a copy after (none
    # when it is 1x1, as after a global pool: the two layouts are the same bytes)
    layouts = {True: (channels_last(src, dt), channels_last(dst, dt)), False: (dense(src, dt), dense(dst, dt))}
    pools = {cl: Pooling(lib, *layouts[cl], algorithm, kernel, strides, pb, pe, dilations) for cl in (True, False)}
    current = torch.get_num_threads()
    impl = optimized_impl(pools[True], current)
    if impl is None:
        return None
    if current > 1:
        prepare_one_thread(lambda: pools[True].instance(1))
    cl_strides = tuple(dtype.itemsize * s for s in channels_last(src, dt)[1])
    n, c, h, w = dst
    threads = torch.get_num_threads
    unread = [None] * (node.get_output_size() - 1)  # MaxPool's indices

    def run(inputs: list) -> list:
        x = inputs[0]
        if x.strides != cl_strides:
            x = np.ascontiguousarray(x)
            y = np.empty(dst, dtype)
            pools[False](threads(), data_address(x), data_address(y))
            return [y, *unread]
        y = np.empty((n, h, w, c), dtype)
        pools[True](threads(), data_address(x), data_address(y))
        if keep_cl or h * w == 1:
            return [y.transpose(0, 3, 1, 2) if keep_cl else y.reshape(dst), *unread]
        return [np.ascontiguousarray(y.transpose(0, 3, 1, 2)), *unread]

    kernel_ = Kernel(run, f"onednn_{node.type_name.lower()}")
    if keep_cl or h * w == 1:
        cl_src = channels_last_value(src, dtype)
        out = channels_last_value(dst, dtype) if keep_cl else dense_value(dst, dtype)
        steps = NativeStep(pools[True], lambda t: t, [Buffer(False, 0, cl_src), Buffer(True, 0, out)])
        kernel_.native = lambda layouts: steps if layouts[0] in (None, cl_src) else None
    kernel_.impl = impl  # type: ignore[attr-defined]
    return kernel_
