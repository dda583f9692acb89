"""Convert and ConvertLike between the element types device tensors hold, with the reference's rules.

float -> integer truncates toward zero, NaN gives 0 and values outside the range clamp to it (done in f64, where
truncation is exact and every i32 bound is; the i64 bounds are set where the f64 value reaches them). Into bool:
``x != 0`` (NaN is true). f64 -> f16 / bf16 runs on the host: torch narrows through f32 (two roundings).
"""

from __future__ import annotations

import torch

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, TORCH_DTYPES, GpuKernel, gpu_kernel, input_type, output_type
from vinerun.plugins.gpu.kernels.unary import Unary, unary_kernel


def _float_to_int(dtype: torch.dtype) -> Unary:
    info = torch.iinfo(dtype)

    def run(x: torch.Tensor) -> torch.Tensor:
        whole = torch.trunc(x.double())
        over, under = whole >= info.max, whole <= info.min
        inside = torch.where(over | under | torch.isnan(whole), torch.zeros_like(whole), whole).to(dtype)
        inside = torch.where(under, torch.full_like(inside, info.min), inside)
        return torch.where(over, torch.full_like(inside, info.max), inside)

    return run


def conversion(src: str, dst: str) -> Unary | None:
    """The device function converting ``src`` tensors to ``dst`` exactly as the reference, or None."""
    if src not in TORCH_DTYPES or dst not in TORCH_DTYPES:
        return None
    dtype = TORCH_DTYPES[dst]
    if dst == "boolean":
        return lambda x: x != 0
    if src in FLOAT_TYPES and dst not in FLOAT_TYPES:
        return _float_to_int(dtype)
    if src == "f64" and dst in ("f16", "bf16"):
        return None
    return lambda x: x.to(dtype)


@gpu_kernel("Convert", "ConvertLike")
def convert(node: Node, device: torch.device) -> GpuKernel | None:
    src, dst = input_type(node, 0), output_type(node)
    if src == dst and src in TORCH_DTYPES:
        return GpuKernel(lambda x: [x[0]], "gpu_convert_same", view=True)
    fn = conversion(src, dst)
    return None if fn is None else unary_kernel(fn, f"convert_{src}_{dst}")
