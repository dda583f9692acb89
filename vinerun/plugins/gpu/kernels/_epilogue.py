"""A fused convolution's post-ops (bias, activations, residual sum, scalar scale / shift) as one generated Triton
kernel over the convolution's fresh output, in place: one pass over the output instead of one kernel per post-op
(PyTorch adds a convolution's bias as a kernel of its own, a slow one on channels-last outputs).

The bias is read per channel (see :data:`~vinerun.plugins.gpu.triton_codegen.OPERAND_LOADS`), the residual in the
output's layout, scales and shifts as one element.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from vinerun.ir.node import Node
from vinerun.plugins.gpu import triton_codegen
from vinerun.plugins.gpu.kernels import GpuKernel
from vinerun.plugins.gpu.kernels._nn import prepared_input

Reader = Callable[[list], torch.Tensor]


def _load_kind(kind: str) -> str:
    return {"bias": "channel", "sum": "full"}.get(kind, "scalar")


def _operand_reader(node: Node, index: int, load: str, channels: int) -> Reader:
    """Input ``index`` as the kernel reads it: a dense ``[channels]`` vector, one element, or as it is."""
    if load == "channel":
        vector = prepared_input(node, index, lambda b: b.reshape(-1).expand(channels).contiguous())
    elif load == "scalar":
        vector = prepared_input(node, index, lambda b: b.reshape(-1)[:1].contiguous())
    else:
        return lambda inputs: inputs[index]
    return lambda inputs: vector(inputs[index])


def _inner(y: torch.Tensor) -> int | None:
    """The flat-index stride of ``y``'s channel axis when ``y`` is dense: 1 channels-last, H*W row-major."""
    if y.dim() == 4 and y.is_contiguous(memory_format=torch.channels_last):
        return 1
    if y.is_contiguous():
        return math.prod(y.shape[2:])
    return None


def _layout_of(y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """The residual ``z`` with ``y``'s strides (one copy when they differ)."""
    if z.stride() == y.stride():
        return z
    fmt = torch.channels_last if _inner(y) == 1 and y.dim() == 4 else torch.contiguous_format
    return z.contiguous(memory_format=fmt)


def triton_epilogue(node: Node, conv: Callable[..., torch.Tensor]) -> GpuKernel | None:
    """``conv(x, w, None)`` then every post-op of ``node`` in one Triton kernel; None without Triton, without a
    static channel count, or with a post-op the generator does not cover."""
    try:
        import triton  # noqa: F401 - ships with PyTorch's CUDA builds
    except ImportError:
        return None
    dim = node.get_output_partial_shape(0)[1]
    if not dim.is_static:
        return None
    channels = dim.get_length()
    steps = node.steps
    operands = [(s.input_index, _load_kind(s.kind)) for s in steps if s.input_index is not None]
    source = triton_codegen.generate([(s.node, s.position, s.input_index is not None) for s in steps],
                                     [load for _, load in operands])
    if source is None:
        return None
    launch = triton_codegen.launcher(triton_codegen.load(source))
    readers = [_operand_reader(node, i, load, channels) for i, load in operands]
    full = [load == "full" for _, load in operands]

    def run(inputs: list[Any]) -> list[Any]:
        y = conv(inputs[0], inputs[1], None)
        inner = _inner(y)
        if inner is None:
            raise ValueError(f"the convolution's output is not dense (strides {y.stride()})")
        args = [_layout_of(y, r(inputs)) if f else r(inputs) for r, f in zip(readers, full, strict=True)]
        launch(y, args, y, triton_codegen.CANDIDATES[0], channels, inner)
        return [y]

    return GpuKernel(run, "cudnn_conv+triton_fused")
