"""Int8 MatMuls by constant weights (:class:`~vinerun.transformations.low_precision.QuantizedMatMul`) through
oneDNN's matmul: u8 / s8 rows by s8 weights, s32 accumulation, the scales, zero points, bias and post-ops
as in :mod:`.conv_int8` (a fully connected layer, a transformer's projections)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import (
    ARG_WEIGHTS,
    INT_TYPES,
    S8,
    PrimitiveCache,
    data_address,
    library,
    optimized_impl,
)
from vinerun.plugins.cpu.kernels._dnnl_ops import MatMul, dense
from vinerun.plugins.cpu.kernels._native import Buffer, NativeStep, dense_value, element_layout, layout_of_value
from vinerun.plugins.cpu.kernels.conv_dnnl import prepare_one_thread
from vinerun.plugins.cpu.kernels.conv_int8 import F32_TYPE
from vinerun.plugins.cpu.kernels.int8_epilogue import epilogue
from vinerun.transformations.low_precision import Quantization, QuantizedLayer

ROW_COUNTS = 16  # primitives kept per layer (one per row count a dynamic model brings)


@cpu_kernel("QuantizedMatMul")
def int8_matmul_kernel(node: Any) -> Kernel | None:
    """oneDNN's int8 matmul for a QuantizedMatMul (a primitive per row count: dynamic rows too), or None (the
    reference)."""
    lib = library()
    layer: QuantizedLayer = node.layer
    if layer.runtime_weights:
        return int8_batch_matmul_kernel(node, layer)
    xs = node.get_input_partial_shape(0)
    if lib is None or xs.rank.is_dynamic or xs.rank.get_length() < 2:
        return None
    src_dt = np.dtype(node.get_input_element_type(0).to_dtype())
    dst_dt = np.dtype(node.get_output_element_type(0).to_dtype())
    ep = epilogue(layer, dst_dt, 2)  # rows x columns
    if ep is None:
        return None
    residual = ep.residual
    w = layer.weights.values.T if getattr(layer.head, "transpose_b", False) else layer.weights.values
    k, n_out = w.shape
    w = np.ascontiguousarray(w)
    ep = ep.without_source_zero_point(layer, w.sum(axis=0, dtype=np.int64))  # a product reads no padding
    dst_type = INT_TYPES.get(dst_dt.name, F32_TYPE)
    attrs = ep.attributes(layer, 2)

    def make(rows: int) -> MatMul:
        return MatMul(lib, dense((rows, k), INT_TYPES[src_dt.name]), w, dense((rows, n_out), dst_type), ep.bias,
                      ep.ops, S8, **attrs)

    primitives = PrimitiveCache(make, ROW_COUNTS)
    current = torch.get_num_threads()
    if xs.is_static:  # made now: one that has no fast implementation leaves the node to the reference
        rows = int(np.prod([int(d) for d in xs.to_shape()][:-1]))
        probe = primitives.get(rows)
        if probe is None:
            return None
        impl = optimized_impl(probe, current)
        if current > 1:
            prepare_one_thread(lambda: probe.instance(1))
    else:
        impl = "per row count"
    threads = torch.get_num_threads

    def run(inputs: list) -> list:
        x = np.ascontiguousarray(inputs[0])
        if x.shape[-1] != k:
            raise ValueError(f"expected {k} values in the last axis, got shape {list(x.shape)}")
        rows = x.size // k
        out_shape = (*x.shape[:-1], n_out)
        mm = primitives.get(rows)
        if mm is None:  # over the cache's limit: the reference
            return node.evaluate(inputs)
        y = np.empty(out_shape, dst_dt)
        if residual is not None:
            r = inputs[residual]  # its bytes: oneDNN reads them with the residual's own type
            np.copyto(y.view(r.dtype), np.broadcast_to(r, out_shape))
        mm(threads(), data_address(x), data_address(y))
        return [y]

    kernel = Kernel(run, "onednn_matmul" + ("_sum" if residual is not None else "") + "_int8")
    kernel.impl = impl
    out = node.get_output_partial_shape(0)
    if xs.is_static and out.is_static:  # in a native segment: dense rows in, dense rows out
        in_shape, out_shape = tuple(int(d) for d in xs.to_shape()), tuple(int(d) for d in out.to_shape())
        buffers = [Buffer(False, 0, dense_value(in_shape, src_dt)), Buffer(True, 0, dense_value(out_shape, dst_dt))]
        step = NativeStep(primitives.get(int(np.prod(in_shape[:-1]))), lambda t: t, buffers, accumulate=residual)
        kernel.native = lambda layouts: step if layouts[0] in (None, step.buffers[0].layout) else None
    return kernel


def _as_signed(b: np.ndarray) -> np.ndarray:
    """u8 weights as s8 (oneDNN's int8 matmul takes s8 weights): ``b - 128`` (the zero point moves by as much)."""
    return b if b.dtype == np.int8 else np.bitwise_xor(b, np.uint8(128)).view(np.int8)


def int8_batch_matmul_kernel(node: Any, layer: QuantizedLayer) -> Kernel | None:
    """Two int8 tensors (attention's scores and context): oneDNN's int8 matmul with the second as runtime s8
    weights (a u8 one shifted by 128 on the way), batch dims broadcast, a primitive per layout pair."""
    lib = library()
    wq: Quantization = layer.weights  # type: ignore[assignment]
    dst_dt = np.dtype(node.get_output_element_type(0).to_dtype())
    ep = epilogue(layer, dst_dt, node.get_output_partial_shape(0).rank.get_length())
    if lib is None or ep is None or ep.residual is not None or ep.bias is not None:
        return None
    ops = ep.ops
    transpose_b = bool(getattr(layer.head, "transpose_b", False))
    dst_type = INT_TYPES.get(dst_dt.name, F32_TYPE)
    shift = -128 if node.get_input_element_type(1).get_type_name() == "u8" else 0
    attrs = ep.attributes(layer, 0)
    attrs["zero_points"][ARG_WEIGHTS] = wq.zero_point + shift

    def make(key: tuple) -> MatMul | None:
        a_layout, b_layout, out_shape = key
        return MatMul(lib, element_layout(a_layout), element_layout(b_layout), dense(out_shape, dst_type), None,
                      ops, **attrs)

    primitives = PrimitiveCache(make, ROW_COUNTS)
    threads = torch.get_num_threads

    def run(inputs: list) -> list:
        a, b = inputs[0], inputs[1]
        b = _as_signed(np.ascontiguousarray(b))
        if transpose_b:
            b = np.swapaxes(b, -1, -2)
        if a.ndim != b.ndim or a.shape[-1] != b.shape[-2] or min(a.strides + b.strides) < 0:
            return node.evaluate(inputs)
        out_shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
        op = primitives.get((layout_of_value(a), layout_of_value(b), out_shape))
        if op is None:
            return node.evaluate(inputs)
        y = np.empty(out_shape, dst_dt)
        op(threads(), data_address(a), data_address(b), data_address(y))
        return [y]

    kernel = Kernel(run, "onednn_matmul_int8")
    a_shape, b_shape = node.get_input_partial_shape(0), node.get_input_partial_shape(1)
    out = node.get_output_partial_shape(0)
    if shift == 0 and a_shape.is_static and b_shape.is_static and out.is_static:  # s8 weights: no conversion
        a_dt = np.dtype(node.get_input_element_type(0).to_dtype())
        a_value = dense_value(tuple(int(d) for d in a_shape.to_shape()), a_dt)
        b_value = dense_value(tuple(int(d) for d in b_shape.to_shape()), np.dtype(np.int8))
        b_read = b_value
        if transpose_b:  # the same memory read with the last two axes swapped
            shape, strides, dtype = b_value
            b_read = (shape[:-2] + shape[-1:] + shape[-2:-1], strides[:-2] + strides[-1:] + strides[-2:-1], dtype)
        out_shape = tuple(int(d) for d in out.to_shape())
        op = primitives.get((a_value, b_read, out_shape))
        if op is not None:
            y_value = dense_value(out_shape, dst_dt)
            buffers = [Buffer(False, 0, a_value), Buffer(False, 1, b_value), Buffer(True, 0, y_value)]
            step = NativeStep(op, lambda t: t, buffers)
            kernel.native = lambda layouts: step if layouts[0] in (None, a_value) and layouts[1] in (None, b_value) \
                else None
    return kernel
