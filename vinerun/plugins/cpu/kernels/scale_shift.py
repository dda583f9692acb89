"""FusedScaleShift (``activation(x * scale + shift)``) as one oneDNN binary multiply with the add and the ReLU as
post-ops (:func:`.binary_dnnl.dnnl_binary_kernel`): one pass over ``x``, in native segments. Elsewhere (dynamic
shapes, no oneDNN, small tensors from Python) the node's NumPy reference."""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import ELTWISE
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD
from vinerun.plugins.cpu.kernels.binary_dnnl import dnnl_binary_kernel


@cpu_kernel("FusedScaleShift")
def fused_scale_shift(node: Node) -> Kernel | None:
    shift = node.const_input(2)
    reference = Kernel(node.evaluate, "ref")
    out = node.get_output_partial_shape(0)
    if shift is None or not out.is_static:
        return reference
    rank = len(out)
    shift = np.asarray(shift, np.float32)
    shift = shift.reshape((1,) * (rank - shift.ndim) + shift.shape)  # the add post-op's operand at the output's rank
    post_ops: list[tuple] = [("binary", BINARY_ADD, shift)]
    if node.activation == "relu":  # type: ignore[attr-defined]
        post_ops.append(("eltwise", ELTWISE["relu"], 0.0, 0.0))
    return dnnl_binary_kernel(node, reference, kind="Multiply", post_ops=post_ops, exec_type="onednn_scale_shift")
