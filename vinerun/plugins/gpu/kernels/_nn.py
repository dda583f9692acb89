"""Checks and small tools the heavy-op kernels (convolution, pooling, matmul, normalization, ...) share."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch

from vinerun.ir.node import Node
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, constant_input, input_type, output_type

Prepare = Callable[[torch.Tensor], torch.Tensor]
_log = logging.getLogger(__name__)


def float_node(node: Node, count: int = 1) -> bool:
    """The first ``count`` inputs and output 0 share one float element type."""
    names = {input_type(node, i) for i in range(count)} | {output_type(node)}
    return len(names) == 1 and names.pop() in FLOAT_TYPES


def static_rank(node: Node, i: int = 0) -> int | None:
    """The rank of input ``i`` when static, else None."""
    rank = node.get_input_partial_shape(i).rank
    return rank.get_length() if rank.is_static else None


def spatial_count(node: Node) -> int | None:
    """The number of spatial axes of the data (input 0, ``[N, C, *spatial]``) when its rank is static."""
    rank = static_rank(node)
    return None if rank is None or rank < 3 else rank - 2


def torch_pad(begin: list[int], end: list[int]) -> list[int]:
    """``F.pad``'s argument (last axis first) for per-axis begin / end pads (negative ones crop)."""
    out: list[int] = []
    for b, e in zip(reversed(begin), reversed(end), strict=True):
        out += [b, e]
    return out


def widened(t: torch.Tensor) -> torch.Tensor:
    """f16 and bf16 as f32 (statistics lose too much in them, and the references compute wider)."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def prepared_input(node: Node, i: int, prepare: Prepare) -> Prepare:
    """``prepare`` applied to input ``i``: once, on the first call, when the input is a Constant (a weight the
    plan uploaded), else on every call."""
    if constant_input(node, i) is None:
        return prepare
    cache: list[torch.Tensor] = []

    def once(t: torch.Tensor) -> torch.Tensor:
        if not cache:
            cache.append(prepare(t))
        return cache[0]

    return once


def channels_last(device: torch.device, spatial: int) -> bool:
    """Whether 2-D convolutions on ``device`` take NHWC tensors (cuDNN's fast layout for tensor cores).

    Outputs then come back channels-last (strided NCHW): kernels reading them must not assume contiguity.
    """
    return device.type == "cuda" and spatial == 2


class Fallback:
    """``fast(*args)`` until it raises once, then ``slow(*args)`` for good, logged with ``what`` (a configuration
    cuDNN or Triton rejects). A failure inside a CUDA graph capture is raised instead: the capture is lost anyway,
    and the plan then runs eagerly, where the next call falls back."""

    def __init__(self, what: str, fast: Callable[..., Any], slow: Callable[..., Any]):
        self.what, self.fast, self.slow = what, fast, slow
        self.failed = False

    def __call__(self, *args: Any) -> Any:
        if not self.failed:
            try:
                return self.fast(*args)
            except Exception as e:  # noqa: BLE001 - say so, and take the slow path from now on
                if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
                    raise
                _log.warning("%s failed (%s); running the unfused form from now on", self.what, e)
                self.failed = True
        return self.slow(*args)
