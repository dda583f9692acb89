"""The FusedLayerNorm kernel: ``torch.nn.functional.layer_norm`` over the last axis with gamma and beta.

f16 and bf16 compute in f32 and round once at the end.
"""

from __future__ import annotations

import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import float_node, to_numpy, to_torch


@cpu_kernel("FusedLayerNorm")
def fused_layer_norm(node: Node) -> Kernel | None:
    gamma, beta = node.const_input(1), node.const_input(2)
    if not float_node(node, 1) or gamma is None or beta is None:
        return None
    wide = node.get_input_element_type(0).get_type_name() in ("f16", "bf16")
    g, b = to_torch(gamma), to_torch(beta)
    if wide:
        g, b = g.float(), b.float()
    shape, eps = (int(gamma.shape[0]),), float(node.eps)

    def run(inputs: list) -> list:
        x = to_torch(inputs[0])
        if wide:
            return [to_numpy(F.layer_norm(x.float(), shape, g, b, eps).to(x.dtype))]
        return [to_numpy(F.layer_norm(x, shape, g, b, eps))]

    return Kernel(run, "aten_layer_norm_fused")
