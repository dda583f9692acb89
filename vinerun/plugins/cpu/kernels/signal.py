"""Fourier transform kernels on ``torch.fft``: DFT, RDFT and IRDFT for f32/f64 tensors.

IDFT stays on the reference: its near-zero outputs carry float32 rounding noise of ~1e-7 that
differs between MKL and pocketfft, and the ONNX suite compares them with an absolute tolerance of 1e-7.
"""

from __future__ import annotations

import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch

_FLOAT = ("f32", "f64")


def _prepare(node: Node, inputs: list) -> tuple[torch.Tensor, list[int], list[int]]:
    x = inputs[0]
    axes = node._axes(x.ndim, inputs[1])
    sizes = node._sizes(inputs[2] if len(inputs) > 2 and inputs[2].size else None, len(axes))
    return to_torch(x), axes, sizes


@cpu_kernel("DFT", "RDFT", "IRDFT")
def fourier(node: Node) -> Kernel | None:
    if node.get_input_element_type(0).get_type_name() not in _FLOAT:
        return None
    kind = node.type_name

    def run(inputs: list) -> list:
        x, axes, sizes = _prepare(node, inputs)
        if kind == "RDFT":
            s = [x.shape[a] if v == -1 else v for a, v in zip(axes, sizes, strict=True)]
            return [to_numpy(torch.view_as_real(torch.fft.rfftn(x, s=s, dim=axes)).contiguous())]
        z = torch.view_as_complex(x.contiguous())
        s = [z.shape[a] if v == -1 else v for a, v in zip(axes, sizes, strict=True)]
        if kind == "IRDFT":
            if sizes[-1] == -1:
                s[-1] = 2 * (z.shape[axes[-1]] - 1)
            return [to_numpy(torch.fft.irfftn(z, s=s, dim=axes).contiguous())]
        return [to_numpy(torch.view_as_real(torch.fft.fftn(z, s=s, dim=axes)).contiguous())]

    return Kernel(run, f"torch_fft_{kind.lower()}")
