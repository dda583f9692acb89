"""DepthwiseFusion: a 1x1 FusedConvolution whose output only a 3x3 depthwise FusedConvolution reads becomes
one :class:`~.fused_ops.FusedConvolutionDW`, where oneDNN fuses the pair for real on this CPU at the
compile's thread count (see :mod:`.kernels.conv_dw_dnnl`). Runs last, on the lowered graph: the pair's
element types are final. OpenVINO's CPU plugin has the same fusion (FuseConvolutionAndDWConvolution).

>>> DepthwiseFusion()(model).modified  # doctest: +SKIP
True
"""

from __future__ import annotations

import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.fused_ops import FusedConvolutionDW
from vinerun.plugins.cpu.kernels.conv_dw_dnnl import fuses
from vinerun.transformations.pass_infra import ReplaceMatches

Pair = tuple[Node, Node]


def _fused(pair: Pair) -> FusedConvolutionDW | None:
    pointwise, depthwise = pair
    if not fuses(pointwise, depthwise, torch.get_num_threads()):
        return None
    return FusedConvolutionDW.from_pair(pointwise, depthwise)  # type: ignore[arg-type]


class DepthwiseFusion(ReplaceMatches):
    """Fuse (1x1 convolution -> depthwise convolution) pairs oneDNN runs as one primitive."""

    def __init__(self) -> None:
        super().__init__(_fused)

    def match(self, node: Node) -> Pair | None:
        if node.type_name != "FusedConvolution":
            return None
        source = node.input_value(0)
        if source.node.type_name != "FusedConvolution" or len(source.get_target_inputs()) != 1:
            return None
        return source.node, node

    def covered(self, match: Pair) -> tuple[Node, list[Node]]:
        return match[1], list(match)
