"""f32 and bf16 FusedLayerNorm through the direct oneDNN binding (:class:`._dnnl_ops.LayerNorm`), made at compile
time for the node's static shape.

Between oneDNN matrix products ATen's layer norm pays to bring its code back into the caches (BERT's 12 took
0.46 ms at 2 threads, 0.62 ms at 1 in bf16); oneDNN's runs warm, and, being one primitive on dense buffers, it
joins the matrix products around it in a native segment.
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import BF16, DATA_TYPES, data_address, library, optimized_impl
from vinerun.plugins.cpu.kernels._dnnl_ops import LayerNorm, dense
from vinerun.plugins.cpu.kernels._native import Buffer, NativeStep, dense_value
from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16
from vinerun.plugins.cpu.kernels.conv_dnnl import prepare_one_thread


def dnnl_layer_norm_kernel(node: Node, gamma: np.ndarray, beta: np.ndarray) -> Kernel | None:
    """The kernel for an f32 or bf16 FusedLayerNorm of static shape (gamma and beta constants), or None."""
    lib = library()
    xs = node.get_input_partial_shape(0)
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    dt = DATA_TYPES.get(dtype.name)
    if lib is None or dt is None or not xs.is_static or (dt == BF16 and not mkldnn_bf16()):
        return None
    shape = tuple(int(d) for d in xs.to_shape())
    if len(shape) < 2 or 0 in shape or gamma.size != shape[-1] or beta.size != shape[-1]:
        return None
    norm = LayerNorm(lib, dense(shape, dt), dense(shape, dt), float(node.eps), gamma, beta)  # type: ignore[attr-defined]
    current = torch.get_num_threads()
    impl = optimized_impl(norm, current)
    if impl is None:
        return None
    if current > 1:
        prepare_one_thread(lambda: norm.instance(1))
    threads = torch.get_num_threads

    def run(inputs: list) -> list:
        x = np.ascontiguousarray(inputs[0])
        y = np.empty(shape, dtype)
        norm(threads(), data_address(x), data_address(y))
        return [y]

    kernel = Kernel(run, "onednn_layer_norm")
    kernel.impl = impl
    value = dense_value(shape, dtype)
    step = NativeStep(norm, lambda t: t, [Buffer(False, 0, value), Buffer(True, 0, value)])
    kernel.native = lambda layouts: step if layouts[0] in (None, value) else None
    return kernel
