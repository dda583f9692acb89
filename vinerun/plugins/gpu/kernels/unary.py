"""Unary element-wise kernels: math functions, rounding, activations and the NaN / Inf tests.

The references compute floats in f64 and round once; torch computes in the tensor's type (f16 / bf16 in f32
inside a kernel), within a few ulps. Rounding (Floor, Ceiling, Round) and the sign / abs / negation are exact.
Math functions of integers (which the references take through f64) run on the host.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, TORCH_DTYPES, GpuKernel, gpu_kernel, input_type, torch_types
from vinerun.plugins.gpu.kernels.elementwise import INT_TYPES, NUMBER_TYPES, numpy_broadcast

Unary = Callable[[torch.Tensor], torch.Tensor]

_FLOAT_MATH: dict[str, Unary] = {
    "Exp": torch.exp, "Log": torch.log, "Sqrt": torch.sqrt, "Erf": torch.erf, "Sin": torch.sin, "Cos": torch.cos,
    "Tan": torch.tan, "Asin": torch.asin, "Acos": torch.acos, "Atan": torch.atan, "Sinh": torch.sinh,
    "Cosh": torch.cosh, "Asinh": torch.asinh, "Acosh": torch.acosh, "Atanh": torch.atanh,
    "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "HSwish": F.hardswish, "HSigmoid": F.hardsigmoid,
    "SoftSign": F.softsign, "Mish": F.mish, "SoftPlus": lambda x: torch.logaddexp(x, torch.zeros_like(x)),
}


def unary_kernel(op: Unary, name: str) -> GpuKernel:
    return GpuKernel(lambda x: [op(x[0])], f"gpu_{name}")


def _same() -> GpuKernel:
    """The input itself (rounding an integer): a view."""
    return GpuKernel(lambda x: [x[0]], "gpu_identity", view=True)


@gpu_kernel(*_FLOAT_MATH)
def float_math(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) not in FLOAT_TYPES:
        return None
    return unary_kernel(_FLOAT_MATH[node.type_name], node.type_name.lower())


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * floor(|x| + 0.5)`` without rounding ``|x| + 0.5`` (the reference adds in f64)."""
    a = torch.abs(x)
    whole = torch.floor(a)
    up = (a - whole) >= 0.5  # exact: the fraction of a float is a float
    return torch.copysign(whole + up.to(x.dtype), x)


_ROUNDING: dict[str, Unary] = {"Floor": torch.floor, "Ceiling": torch.ceil}


@gpu_kernel("Floor", "Ceiling", "Round")
def rounding(node: Node, device: torch.device) -> GpuKernel | None:
    t = input_type(node, 0)
    if t in INT_TYPES:
        return _same()
    if t not in FLOAT_TYPES:
        return None
    if node.type_name != "Round":
        return unary_kernel(_ROUNDING[node.type_name], node.type_name.lower())
    if node.mode == "half_to_even":
        return unary_kernel(torch.round, "round_half_even")
    return unary_kernel(_round_half_away, "round_half_away")


def _sign(x: torch.Tensor) -> torch.Tensor:
    """-1, 0 or 1, and NaN for NaN (torch gives 0)."""
    return torch.where(torch.isnan(x), x, torch.sign(x)) if x.is_floating_point() else torch.sign(x)


_SIGNED: dict[str, Unary] = {"Abs": torch.abs, "Negative": torch.neg, "Sign": _sign,
                             "Relu": lambda x: torch.clamp_min(x, 0)}


@gpu_kernel(*_SIGNED)
def signed(node: Node, device: torch.device) -> GpuKernel | None:
    """Exact on floats and integers (unsigned: Abs is the input, Negative wraps)."""
    t = input_type(node, 0)
    if t not in NUMBER_TYPES:
        return None
    if t == "u8" and node.type_name in ("Abs", "Relu"):
        return _same()
    return unary_kernel(_SIGNED[node.type_name], node.type_name.lower())


@gpu_kernel("IsNaN", "IsFinite", "IsInf")
def float_test(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) not in NUMBER_TYPES:
        return None
    if node.type_name == "IsNaN":
        return unary_kernel(torch.isnan, "isnan")
    if node.type_name == "IsFinite":
        return unary_kernel(torch.isfinite, "isfinite")
    pos, neg = node.detect_positive, node.detect_negative
    if pos and neg:
        return unary_kernel(torch.isinf, "isinf")
    if pos or neg:
        return unary_kernel(torch.isposinf if pos else torch.isneginf, "isposinf" if pos else "isneginf")
    return unary_kernel(lambda x: torch.zeros(x.shape, dtype=torch.bool, device=x.device), "isinf_none")


@gpu_kernel("Clamp")
def clamp(node: Node, device: torch.device) -> GpuKernel | None:
    """Floats clip to the bounds; integers to the bounds rounded inward and limited to the type's range."""
    t = input_type(node, 0)
    lo, hi = node.min, node.max
    if t in INT_TYPES:
        info = torch.iinfo(TORCH_DTYPES[t])
        lo = max(math.ceil(lo), info.min) if math.isfinite(lo) else info.min
        hi = min(math.floor(hi), info.max) if math.isfinite(hi) else info.max
    elif t not in FLOAT_TYPES:
        return None
    return unary_kernel(lambda x: torch.clamp(x, lo, hi), "clamp")


@gpu_kernel("Elu", "Gelu")
def parametrized(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) not in FLOAT_TYPES:
        return None
    if node.type_name == "Elu":
        alpha = node.alpha
        return unary_kernel(lambda x: F.elu(x, alpha), "elu")
    approximate = "tanh" if node.approximation_mode.upper() == "TANH" else "none"
    return unary_kernel(lambda x: F.gelu(x, approximate=approximate), f"gelu_{approximate}")


_PARAM: dict[str, Callable[..., torch.Tensor]] = {
    "PRelu": lambda x, s: torch.where(x < 0, x * s, x),
    "Selu": lambda x, a, lam: lam * torch.where(x > 0, x, a * torch.expm1(x)),
    "HardSigmoid": lambda x, a, b: torch.clamp(x * a + b, 0.0, 1.0),
    "Swish": lambda x, beta=None: x * torch.sigmoid(x if beta is None else x * beta),
}


@gpu_kernel(*_PARAM)
def param_activation(node: Node, device: torch.device) -> GpuKernel | None:
    """Activations whose parameters are (broadcast) inputs of the data's type."""
    if input_type(node, 0) not in FLOAT_TYPES or not torch_types(node) or not numpy_broadcast(node):
        return None
    fn = _PARAM[node.type_name]
    return GpuKernel(lambda x: [fn(*[v for v in x if v is not None])], f"gpu_{node.type_name.lower()}")
