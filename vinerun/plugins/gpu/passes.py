"""The GPU's graph passes, in order: pattern rewrites (generic ``transformations``), attention and LayerNorm,
the GPU's convolution / MatMul fusions, element-wise chains, f16 lowering. The device decides which generic
rewrites it takes; the fused nodes are its own (:mod:`.fused_ops`, :mod:`.eltwise_chain`)."""

from __future__ import annotations

from typing import Any

import torch

from vinerun.ir.model import Model
from vinerun.plugins.gpu.eltwise_chain import EltwiseChainFusion
from vinerun.plugins.gpu.fused_ops import gpu_fusions
from vinerun.plugins.gpu.kernels import has_device_kernel
from vinerun.plugins.gpu.precision import lower_precision
from vinerun.transformations import common_cleanup
from vinerun.transformations.clamp_fusion import MinMaxToClamp
from vinerun.transformations.fused_transformer import attention_fusion, layer_norm_fusion
from vinerun.transformations.gelu_fusion import GeluFusion
from vinerun.transformations.hswish_fusion import HSwishFusion
from vinerun.transformations.identity_elimination import IdentityConvertElimination, IdentityReshapeElimination
from vinerun.transformations.linear_folding import LinearFolding
from vinerun.transformations.mvn_fusion import MVNFusion
from vinerun.transformations.pad_fusion import PadFusion
from vinerun.transformations.parallel_matmul import ParallelMatMulFusion
from vinerun.transformations.shared_ops import SharedOpOptimization
from vinerun.transformations.swish_fusion import SwishFusion
from vinerun.transformations.unroll_iterators import UnrollIterators


def rewrite_patterns(model: Model) -> None:
    """Converts and Reshapes that do nothing out, a constant Pad into the convolution or pooling after it,
    constant-bound Minimum / Maximum into Clamp, written-out hard-swish, Swish, GELU and mean-variance normalization
    into their ops, constant scales and shifts (BatchNorm too) folded into the convolution before them."""
    IdentityConvertElimination()(model)
    IdentityReshapeElimination()(model)  # BERT's before its attention's head merge, which the fusion then takes
    PadFusion()(model)
    MinMaxToClamp()(model)
    HSwishFusion()(model)
    LinearFolding()(model)
    SwishFusion()(model)
    GeluFusion()(model)
    MVNFusion()(model)  # a written-out LayerNorm, for the LayerNorm fusion


def gpu_passes(model: Model, precision: Any, device: torch.device, custom: frozenset[str] = frozenset(),
               unroll: bool = True) -> None:
    """Every GPU pass on ``model``, in place; ops of the ``custom`` types (the user's kernels) are neither fused
    nor lowered. ``unroll`` (``GPU_ENABLE_LOOP_UNROLLING``): TensorIterator / Loop with a known count become copies
    of their bodies first, so their ops run on device kernels instead of the host interpreter."""
    if unroll and UnrollIterators()(model).modified:
        common_cleanup()(model)  # slices of constants, shape arithmetic of the copies

    SharedOpOptimization()(model)  # one node for the copies exporters write (BERT's mask Where in every layer)
    rewrite_patterns(model)
    attention_fusion()(model)
    layer_norm_fusion()(model)
    ParallelMatMulFusion()(model)  # query, key and value projections as one GEMM (its parts are views)
    gpu_fusions(model)
    EltwiseChainFusion(lambda node: node.type_name not in custom and has_device_kernel(node, device))(model)
    lower_precision(model, precision, device, custom)
