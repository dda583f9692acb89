"""Which ops the GPU plugin computes in f16 (its default ``INFERENCE_PRECISION_HINT``) or bf16.

As OpenVINO's GPU plugin, the whole float graph runs in the narrow type: every op a device kernel computes (views
and data movement too) is an anchor, its f32 constants converted once, at compile time. Ops that run on
the host (their NumPy reference) keep f32 behind a Convert, and model outputs keep their declared types.
PyTorch's CUDA kernels accumulate reductions, Softmax and normalizations of f16 in f32.
"""

from __future__ import annotations

import torch

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ir.types import Type
from vinerun.plugins.gpu.kernels import has_device_kernel
from vinerun.transformations.precision import EnforceInferencePrecision, PrecisionPolicy

#: the f16 tolerance docs/gpu.md states: a result's largest error within this fraction of the f32 result's
#: largest magnitude (f16 keeps 11 significant bits; errors grow over a network's depth)
F16_TOLERANCE = 2**-6

_NEVER = frozenset({"Convert", "ShapeOf", "Range", "NonZero", "TopK", "Parameter", "Constant", "Result"})
#: ops that make a model "quantized" (ENABLE_FP16_FOR_QUANTIZED_MODELS): FakeQuantize, ONNX QDQ and QOperator ops
QUANTIZATION_OPS = frozenset({"FakeQuantize", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                              "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger"})


def _lowerable(device: torch.device, custom: frozenset[str]):  # noqa: ANN202 - a closure the policy calls
    def accepts(node: Node) -> bool:
        return node.type_name not in _NEVER and node.type_name not in custom and has_device_kernel(node, device)

    return accepts


class _AnyType(frozenset):
    """The anchor set of every op type (the policy's ``accepts`` picks the ones with a device kernel)."""

    def __contains__(self, item: object) -> bool:
        return item not in _NEVER


def is_quantized(model: Model) -> bool:
    """The model has FakeQuantize or ONNX quantization ops (what OpenVINO's GPU plugin calls a quantized model)."""
    return any(n.type_name in QUANTIZATION_OPS for n in model.get_ordered_ops())


def quantized_model_precision(model: Model, precision: Type, enable_fp16: bool) -> Type:
    """``ENABLE_FP16_FOR_QUANTIZED_MODELS``: a quantized model runs its float layers in ``precision`` (f16 by
    default) when it is YES, in f32 when it is NO. The GPU has no int8 kernels, so its quantized layers are
    FakeQuantize / Q / DQ kernels around f16 or f32 Convolutions and MatMuls either way."""
    if not enable_fp16 and precision in (Type.f16, Type.bf16) and is_quantized(model):
        return Type.f32
    return precision


def lower_precision(model: Model, precision: Type, device: torch.device, custom: frozenset[str] = frozenset()) -> None:
    """Lower ``model`` in place to ``precision`` (f16 or bf16) where a device kernel computes the op (the user's
    ``custom`` kernels get the model's own types)."""
    if precision not in (Type.f16, Type.bf16):
        return
    policy = PrecisionPolicy(anchors=_AnyType(), accepts=_lowerable(device, custom))
    EnforceInferencePrecision(precision, policy).run(model, check_graph=False)
