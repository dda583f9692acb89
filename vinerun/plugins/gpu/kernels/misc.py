"""Shape and sequence kernels: ShapeOf, Range and NonZero.

ShapeOf of a static shape is a constant made at compile time (copied per run, on the device); of a dynamic
shape it is uploaded per run (``host=True``). Range with constant bounds is made once; with computed bounds
they are read on the host. NonZero's output size depends on the data: it synchronizes (``host=True``).
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.ops.sequence_gen import range_length
from vinerun.plugins.gpu.kernels import TORCH_DTYPES, GpuKernel, constant_input, gpu_kernel, output_type, to_device


@gpu_kernel("ShapeOf")
def shape_of(node: Node, device: torch.device) -> GpuKernel | None:
    dtype = TORCH_DTYPES.get(output_type(node))
    if dtype is None:
        return None
    ps = node.get_input_partial_shape(0)
    if ps.is_static:
        value = torch.tensor([int(d) for d in ps.to_shape()], dtype=dtype, device=device)
        return GpuKernel(lambda x: [value.clone()], "gpu_shape_of")
    return GpuKernel(lambda x: [torch.tensor(list(x[0].shape), dtype=dtype, device=device)], "gpu_shape_of",
                     host=True)


def _range(start: float, stop: float, step: float, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``start + i * step`` computed in f64 (i64 for integers) and cast, as the reference."""
    real = dtype.is_floating_point
    num = float if real else int
    start, stop, step = num(start), num(stop), num(step)
    acc = torch.float64 if real else torch.int64
    n = range_length(start, stop, step)
    return (start + torch.arange(n, dtype=acc, device=device) * step).to(dtype)


@gpu_kernel("Range")
def range_(node: Node, device: torch.device) -> GpuKernel | None:
    dtype = TORCH_DTYPES.get(output_type(node))
    if dtype is None:
        return None
    consts = [constant_input(node, i) for i in range(3)]
    if all(c is not None for c in consts):
        (value,) = node.evaluate(consts)
        on_device = to_device(value, device)
        return GpuKernel(lambda x: [on_device.clone()], "gpu_range")
    np_type = np.dtype(np.float64 if dtype.is_floating_point else np.int64)

    def run(x: list) -> list:
        # the inputs are taken in the output type first, as the reference
        bounds = [np.asarray(v.reshape(-1)[0].to(dtype).cpu().item(), np_type).item() for v in x]
        return [_range(*bounds, dtype, device)]

    return GpuKernel(run, "gpu_range", host=True)


@gpu_kernel("NonZero")
def nonzero(node: Node, device: torch.device) -> GpuKernel | None:
    dtype = TORCH_DTYPES.get(output_type(node))
    if dtype is None:
        return None

    def run(x: list) -> list:
        t = x[0]
        if t.ndim == 0:
            return [torch.zeros((0, 1 if bool(t != 0) else 0), dtype=dtype, device=t.device)]
        return [torch.nonzero(t).T.contiguous().to(dtype)]

    return GpuKernel(run, "gpu_nonzero", host=True)
