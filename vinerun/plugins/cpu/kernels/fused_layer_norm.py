"""The FusedLayerNorm kernel: oneDNN's layer normalization for static shapes (:mod:`.layer_norm_dnnl`), else
``torch.nn.functional.layer_norm`` over the last axis with gamma and beta.

bf16 runs ATen's mixed-type kernel (bf16 in and out, f32 gamma/beta and statistics); f16 computes in f32
and rounds once at the end.
"""

from __future__ import annotations

import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import FLOAT_TYPES, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.layer_norm_dnnl import dnnl_layer_norm_kernel


@cpu_kernel("FusedLayerNorm")
def fused_layer_norm(node: Node) -> Kernel | None:
    gamma, beta = node.const_input(1), node.const_input(2)
    et = node.get_input_element_type(0).get_type_name()
    if et not in FLOAT_TYPES or gamma is None or beta is None:
        return None
    direct = dnnl_layer_norm_kernel(node, gamma, beta)
    if direct is not None:
        return direct
    g, b = to_torch(gamma), to_torch(beta)
    if et in ("f16", "bf16"):  # f32 scales (the precision pass keeps them so; a bf16 model's are widened)
        g, b = g.float(), b.float()
    shape, eps = (int(gamma.shape[0]),), float(node.eps)
    widen = et == "f16"

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        if widen:
            return [to_numpy(F.layer_norm(x.float(), shape, g, b, eps).to(x.dtype))]
        return [to_numpy(F.layer_norm(x, shape, g, b, eps))]

    return Kernel(run, "aten_layer_norm_fused")
