"""FakeQuantize, QuantizeLinear and DequantizeLinear as element-wise device kernels (the GPU has no int8 kernels:
a quantized model runs its Convolutions and MatMuls in f16 or f32 between these).

FakeQuantize computes in f32 (f64 for f64 tensors) where the reference computes in f64: a value within an f32
rounding of a level's midpoint may land on the neighbouring level. QuantizeLinear divides in the reference's
precision (the ``precision`` attribute, else the scale's type), rounds half to even and saturates; DequantizeLinear
computes ``(x - zero_point) * scale`` in f32, as the reference. Blocked scales (``block_size``) and float8 / int4
types run on the host.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, TORCH_DTYPES, GpuKernel, gpu_kernel, input_type, output_type
from vinerun.plugins.gpu.kernels.elementwise import numpy_broadcast

Param = Callable[[torch.Tensor], torch.Tensor]
_INTS = ("i8", "u8", "i16", "i32")


@gpu_kernel("FakeQuantize")
def fake_quantize(node: Node, device: torch.device) -> GpuKernel | None:
    types = [input_type(node, i) for i in range(5)]
    if not all(t in FLOAT_TYPES for t in types) or not numpy_broadcast(node):
        return None
    steps = float(node.get_attributes()["levels"] - 1)

    def run(x: list[torch.Tensor]) -> list[torch.Tensor]:
        p = torch.float64 if x[0].dtype == torch.float64 else torch.float32
        v, in_lo, in_hi, out_lo, out_hi = (t.to(p) for t in x)
        q = torch.round((v - in_lo) / (in_hi - in_lo) * steps) / steps * (out_hi - out_lo) + out_lo
        above = torch.where(v > torch.maximum(in_lo, in_hi), out_hi, q)
        y = torch.where(v <= torch.minimum(in_lo, in_hi), out_lo, above)
        return [y.to(x[0].dtype)]

    return GpuKernel(run, "gpu_fake_quantize")


def _param_shape(node: Node, i: int) -> Param | None:
    """How input ``i`` (a scale or zero point) broadcasts to ``x``: as it is (one value), or along ``axis``; None for
    a blocked or unknown layout."""
    if i >= node.get_input_size() or node.input_value(i) is None:
        return lambda p: p
    attrs = node.get_attributes()
    rank = node.get_input_partial_shape(0).rank
    ps = node.get_input_partial_shape(i)
    if int(attrs.get("block_size", 0)) > 0 or rank.is_dynamic or ps.rank.is_dynamic:
        return None
    if ps.rank.get_length() == 0 or (ps.is_static and ps.to_shape() == [1]):
        return lambda p: p.reshape(())
    if ps.rank.get_length() != 1:
        return None
    n = rank.get_length()
    axis = int(attrs.get("axis", 1))
    axis = axis + n if axis < 0 else axis
    shape = [1] * n
    shape[axis] = -1
    return lambda p: p.reshape(shape)


@gpu_kernel("QuantizeLinear")
def quantize_linear(node: Node, device: torch.device) -> GpuKernel | None:
    dst = output_type(node)
    scale_view, zp_view = _param_shape(node, 1), _param_shape(node, 2)
    precision = node.get_attributes()["precision"]
    p = precision.get_type_name() if precision.is_static() else input_type(node, 1)
    if (dst not in _INTS or input_type(node, 0) not in FLOAT_TYPES or p not in FLOAT_TYPES or scale_view is None
            or zp_view is None or not node.get_attributes().get("saturate", True)):
        return None
    dtype, compute = TORCH_DTYPES[dst], TORCH_DTYPES[p]
    info = torch.iinfo(dtype)
    wide = torch.float64 if dst == "i32" else torch.float32  # exact for the integer sums of the target's range

    def run(x: list[torch.Tensor]) -> list[torch.Tensor]:
        q = torch.round((x[0].to(compute) / scale_view(x[1]).to(compute)).to(wide))
        if len(x) > 2 and x[2] is not None:
            q = q + zp_view(x[2]).to(wide)
        return [torch.clamp(q, info.min, info.max).to(dtype)]

    return GpuKernel(run, "gpu_quantize_linear")


@gpu_kernel("DequantizeLinear")
def dequantize_linear(node: Node, device: torch.device) -> GpuKernel | None:
    src, dst = input_type(node, 0), output_type(node)
    scale_view, zp_view = _param_shape(node, 1), _param_shape(node, 2)
    if src not in _INTS or dst not in FLOAT_TYPES or input_type(node, 1) not in FLOAT_TYPES or None in (
            scale_view, zp_view):
        return None
    if node.get_input_size() > 2 and node.input_value(2) is not None and input_type(node, 2) not in _INTS:
        return None
    dtype = TORCH_DTYPES[dst]

    def run(x: list[torch.Tensor]) -> list[torch.Tensor]:
        v = x[0].to(torch.float32)
        if len(x) > 2 and x[2] is not None:
            v = v - zp_view(x[2]).to(torch.float32)
        return [(v * scale_view(x[1]).to(torch.float32)).to(dtype)]

    return GpuKernel(run, "gpu_dequantize_linear")
