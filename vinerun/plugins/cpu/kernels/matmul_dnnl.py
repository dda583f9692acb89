"""f32 and bf16 FusedMatMul through the direct oneDNN binding (:class:`._dnnl_ops.MatMul`): the weight
reordered once (to bf16 for bf16), the f32 bias, the activation and the residual sum ("binary add" on the
residual's buffer, no copy) inside one primitive made at compile time; a call only points it at the input,
output and residual.

Why not ``torch.ops.mkldnn._linear_pointwise``: it builds a primitive descriptor per call (~20 us), and each
ATen op that follows oneDNN work pays to bring its own code back into the caches (measured: BERT's residual
add and MobileNetV2's classifier ran 2-3x slower inside a sequence of convolutions than alone).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, gemv
from vinerun.plugins.cpu.kernels._dnnl import (
    BF16,
    DATA_TYPES,
    ELTWISE,
    F32,
    PrimitiveCache,
    data_address,
    library,
    optimized_impl,
)
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD, MatMul, dense
from vinerun.plugins.cpu.kernels._native import Buffer, NativeStep, dense_value
from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16
from vinerun.plugins.cpu.kernels.conv_dnnl import eltwise, prepare_one_thread


def post_op(node: Node, beta: np.ndarray | None) -> tuple | None:
    """The oneDNN eltwise post-op for an activation (GELU, Mish and SoftPlus included), or None."""
    if node.type_name == "Gelu":
        mode = "gelu_tanh" if node.approximation_mode.upper() == "TANH" else "gelu_erf"  # type: ignore[attr-defined]
        return ("eltwise", ELTWISE[mode], 0.0, 0.0)
    if node.type_name == "Mish":
        return ("eltwise", ELTWISE["mish"], 0.0, 0.0)
    if node.type_name == "SoftPlus":
        return ("eltwise", ELTWISE["soft_relu"], 1.0, 0.0)  # log(1 + exp(alpha x)) / alpha
    return eltwise(node, beta)


def _post_ops(parts: Any, out: tuple[int, ...], dt: int) -> list[tuple] | None:
    """The fused steps as oneDNN post-ops (the residual as a binary add on a dense buffer of oneDNN type ``dt``),
    or None."""
    ops: list[tuple] = []
    for act in (parts.pre, "sum" if parts.sum_index is not None else None, parts.post):
        if act == "sum":
            ops.append(("binary", BINARY_ADD, dense(out, dt)))
        elif act is not None:
            op = post_op(act, parts.beta.get(id(act)))
            if op is None:
                return None
            ops.append(op)
    return ops


def dnnl_linear_kernel(node: Any, parts: Any, w: np.ndarray, bias: np.ndarray | None) -> Kernel | None:
    """The kernel for an f32 or bf16 FusedMatMul of static shape by the constant ``w`` ([K, N]), or None."""
    lib = library()
    xshape, oshape = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    dt = DATA_TYPES.get(dtype.name)
    if (lib is None or dt is None or not xshape.is_static or not oshape.is_static
            or (dt == BF16 and not mkldnn_bf16())):
        return None
    shape = tuple(int(d) for d in oshape.to_shape())
    k, n = w.shape
    rows = int(np.prod(shape[:-1]))
    ops = _post_ops(parts, (rows, n), dt)
    if ops is None:
        return None
    residual = parts.sum_index
    vector = rows == 1 and dt == F32 and residual is None and k * n >= GEMV_MIN_WEIGHTS and gemv.available() \
        and gemv.takes(ops)
    if vector:  # a classifier at batch 1: a read of the weights, streamed (see gemv)
        mm: MatMul | gemv.Gemv = gemv.Gemv(lib, w, bias, ops)
    else:
        mm = MatMul(lib, dense((rows, k), dt), w, dense((rows, n), dt), bias, ops, weights_type=dt)
    current = torch.get_num_threads()
    impl = optimized_impl(mm, current)
    if impl is None:
        return None
    if current > 1:
        prepare_one_thread(lambda: mm.instance(1))
    threads = torch.get_num_threads

    def run(inputs: list) -> list:
        x = np.ascontiguousarray(inputs[0])
        y = np.empty(shape, dtype)
        if residual is None:
            mm(threads(), data_address(x), data_address(y))
        else:
            r = np.ascontiguousarray(inputs[residual])  # held here: a copy must outlive the call
            mm(threads(), data_address(x), data_address(y), data_address(r))
        return [y]

    kernel = Kernel(run, "gemv_matmul" if vector else "onednn_matmul")
    x_value, y_value = dense_value(tuple(int(d) for d in xshape.to_shape()), dtype), dense_value(shape, dtype)
    buffers = [Buffer(False, 0, x_value), Buffer(True, 0, y_value)]
    if residual is not None:
        r_shape = node.get_input_partial_shape(residual)
        same = r_shape.is_static and tuple(int(d) for d in r_shape.to_shape()) == shape
        buffers = [*buffers, Buffer(False, residual, y_value)] if same else None
    if buffers is not None:
        step = NativeStep(mm, lambda t: t, buffers)
        kernel.native = lambda layouts: step if all(layouts[b.index] in (None, b.layout) for b in buffers
                                                    if not b.output) else None
    kernel.impl = impl
    return kernel


#: a one-row product by at least this many weights (1 MB of f32) runs the streaming matrix-vector kernel: smaller
#: ones are in cache, where oneDNN's is as fast and has no OpenMP region to pay for
GEMV_MIN_WEIGHTS = 1 << 18

#: distinct row counts a dynamic-shape MatMul makes primitives for (each keeps its own packed weights); others
#: run the fallback kernel
ROW_COUNTS = 4


def dnnl_dynamic_linear_kernel(node: Any, parts: Any, w: np.ndarray, bias: np.ndarray | None,
                               fallback: Kernel) -> Kernel | None:
    """The kernel for an f32 or bf16 FusedMatMul by the constant ``w`` ([K, N]) whose rows are known only at run
    time (a recurrent step, a decoder): a primitive per row count, made when that count first comes (at most
    :data:`ROW_COUNTS`), else ``fallback``. Measured on silero-vad's LSTM ([1, 128] x [128, 512]) inside the
    model, 1 thread: 26-27 us a step on PyTorch's addmm, 17-22 us here (it streams 256 KB of weights)."""
    lib = library()
    xshape = node.get_input_partial_shape(0)
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    dt = DATA_TYPES.get(dtype.name)
    if (lib is None or dt is None or xshape.is_static or (dt == BF16 and not mkldnn_bf16())
            or parts.sum_index is not None):  # a residual sum is fused for static shapes only
        return None
    k, n = w.shape
    threads = torch.get_num_threads

    def primitive(rows: int) -> MatMul | None:
        ops = _post_ops(parts, (rows, n), dt)
        return None if ops is None else MatMul(lib, dense((rows, k), dt), w, dense((rows, n), dt), bias, ops,
                                               weights_type=dt)

    by_rows = PrimitiveCache(primitive, ROW_COUNTS)

    def run(inputs: list) -> list:
        x = inputs[0]
        mm = by_rows.get(x.size // k) if x.ndim >= 1 and x.shape[-1] == k and x.dtype == dtype and x.size else None
        if mm is None:
            return fallback.fn(inputs)
        x = np.ascontiguousarray(x)
        y = np.empty(x.shape[:-1] + (n,), dtype)
        mm(threads(), data_address(x), data_address(y))
        return [y]

    return Kernel(run, "onednn_matmul")
