"""The GPU plugin's internal ops and the fusion passes that make them. Never written to IR; each keeps a NumPy
reference composed from the ops it replaced, and ``fused_names`` so that profiling lists those OPTIMIZED_OUT.

Their kernels are in :mod:`.kernels.fused` (cuDNN / cuBLAS with the post-ops applied in place).
"""

from __future__ import annotations

from typing import NamedTuple

from vinerun.ir.core_ops import Constant
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.transformations.fused_chain import FusedConvolutionBase, FusedMatMulBase
from vinerun.transformations.fused_transformer import FusedLayerNorm
from vinerun.transformations.fusions import ConvFusion
from vinerun.transformations.matmul_fusion import MatMulFusion
from vinerun.transformations.pass_infra import ReplaceMatches
from vinerun.transformations.split_conv_concat import SplitConvConcatToGroupConv


class GpuFusedConvolution(FusedConvolutionBase):
    """(Group)Convolution with fused bias, activation, residual sum, scale and shift.

    >>> fused = GpuFusedConvolution.from_chain(match_chain(conv))  # doctest: +SKIP
    >>> fused.post_ops
    'bias,sum,relu'
    """

    type_name, version = "FusedConvolution", "vinerun_gpu"


class GpuFusedMatMul(FusedMatMulBase):
    """MatMul by a constant 2-D weight with fused bias, activation and residual sum (a bare one too: its weight is
    laid out for the GEMM once).

    >>> fused = GpuFusedMatMul.from_chain(match_matmul_chain(matmul))  # doctest: +SKIP
    >>> fused.post_ops
    'bias,gelu'
    """

    type_name, version = "FusedMatMul", "vinerun_gpu"


class GpuResidualLayerNorm(FusedLayerNorm):
    """LayerNorm of ``x + residual`` (a transformer block's residual add, then its LayerNorm): one pass over the
    rows instead of an add kernel writing the sum and a LayerNorm kernel reading it back.

    Inputs: x, residual (same shape and type), gamma ``[N]``, beta ``[N]``.
    """

    type_name, version, num_inputs = "ResidualLayerNorm", "vinerun_gpu", (4, 4)

    def evaluate(self, inputs: list) -> list:
        x, residual, gamma, beta = inputs
        return super().evaluate([x + residual, gamma, beta])

    @classmethod
    def from_pair(cls, match: tuple[FusedLayerNorm, Node]) -> GpuResidualLayerNorm:
        norm, add = match
        a, b = add.input_values()
        gamma, beta = norm.input_value(1), norm.input_value(2)
        fused = cls(a, b, gamma, beta, name=norm.friendly_name, eps=norm.eps)
        fused._remember([add, norm, *(_Named(n, t) for n, t in norm.fused_names)], norm)
        return fused


class _Named(NamedTuple):
    """A node the fused LayerNorm had already replaced, as ``_remember`` lists it."""

    friendly_name: str
    type_name: str


class ResidualLayerNormFusion(ReplaceMatches):
    """``FusedLayerNorm(a + b)`` -> ``ResidualLayerNorm(a, b)`` where the add has no other reader and ``a``, ``b``
    are tensors of one static shape and type (not a broadcast bias: that one stays with its MatMul)."""

    def match(self, node: Node) -> tuple[FusedLayerNorm, Node] | None:
        if type(node) is not FusedLayerNorm:
            return None
        add = node.input_value(0).node
        if add.type_name != "Add" or add.get_output_size() != 1 or len(add.output(0).get_target_inputs()) != 1:
            return None
        a, b = add.input_values()
        if isinstance(a.node, Constant) or isinstance(b.node, Constant):
            return None
        same = a.partial_shape.is_static and a.partial_shape == b.partial_shape
        return (node, add) if same and a.element_type == b.element_type else None

    def covered(self, match: tuple[FusedLayerNorm, Node]) -> tuple[Node, list[Node]]:
        return match[0], list(match)


def gpu_fusions(model: Model) -> bool:
    """Run the GPU's fusions on ``model`` in place; whether anything changed.

    A residual add before a LayerNorm goes into the LayerNorm first (before the MatMul fusion could take it as a
    sum post-op). The split-convolutions-concat merge runs before the convolution fusion, so that the
    GroupConvolution it makes can take the bias and activation after the concat in the convolution fusion.
    """
    passes = [ResidualLayerNormFusion(GpuResidualLayerNorm.from_pair), SplitConvConcatToGroupConv(),
              ConvFusion(GpuFusedConvolution.from_chain), MatMulFusion(GpuFusedMatMul.from_chain)]
    modified = False
    for p in passes:
        modified = p(model).modified or modified
    return modified
