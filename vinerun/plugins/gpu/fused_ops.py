"""The GPU plugin's internal ops and the fusion passes that make them. Never written to IR; each keeps a NumPy
reference composed from the ops it replaced, and ``fused_names`` so that profiling lists those OPTIMIZED_OUT.

Their kernels are in :mod:`.kernels.fused` (cuDNN / cuBLAS with the post-ops applied in place).
"""

from __future__ import annotations

from vinerun.ir.model import Model
from vinerun.transformations.fused_chain import FusedConvolutionBase, FusedMatMulBase
from vinerun.transformations.fusions import ConvFusion
from vinerun.transformations.matmul_fusion import MatMulFusion
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


def gpu_fusions(model: Model) -> bool:
    """Run the GPU's fusions on ``model`` in place; whether anything changed.

    The split-convolutions-concat merge runs first, so that the GroupConvolution it makes can take the bias and
    activation after the concat in the convolution fusion.
    """
    passes = [SplitConvConcatToGroupConv(), ConvFusion(GpuFusedConvolution.from_chain),
              MatMulFusion(GpuFusedMatMul.from_chain)]
    modified = False
    for p in passes:
        modified = p(model).modified or modified
    return modified
