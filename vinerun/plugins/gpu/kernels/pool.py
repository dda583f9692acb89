"""Pooling on cuDNN (through PyTorch): MaxPool (values and indices), AvgPool, AdaptiveAvgPool, AdaptiveMaxPool.

PyTorch pads symmetrically by at most half the window and rounds up as ``ceil_torch``. Any other geometry (``ceil``,
asymmetric or large pads, ``same_*``) pads explicitly first (with -inf for max, zeros for average) and pools without
padding; the average then takes the reference's own window counts. Each input size's geometry is worked out once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.ops.pooling import window_counts
from vinerun.plugins.gpu.kernels import GpuKernel, constant_input, gpu_kernel, output_type
from vinerun.plugins.gpu.kernels._nn import float_node, spatial_count, torch_pad

_MAX = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
_ADAPTIVE_AVG = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}
_ADAPTIVE_MAX = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}
_INDEX = {"i32": torch.int32, "i64": torch.int64}


@dataclass
class Geometry:
    """How PyTorch pools one input size: ``pad`` first (``F.pad``'s argument, or None), then pool with ``padding``
    and ``ceil``; ``begin`` and ``padded`` map indices back when padded explicitly."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    padding: list[int]
    ceil: bool
    pad: list[int] | None
    begin: list[int]
    padded: list[int]
    outs: list[int]


def geometry(node: Node, sizes: list[int]) -> Geometry:
    """The pooling of ``node`` over spatial ``sizes`` as PyTorch runs it."""
    kernel, strides, dilations, pb, pe, outs = node.resolved(sizes)
    native = pb == pe and all(2 * p <= d * (k - 1) + 1 for p, k, d in zip(pb, kernel, dilations, strict=True))
    if native and node.rounding_type in ("floor", "ceil_torch"):
        return Geometry(kernel, strides, dilations, pb, node.rounding_type == "ceil_torch", None, pb, sizes, outs)
    # pad the end far enough for every window the rounding asks for
    ends = [max((o - 1) * s + d * (k - 1) + 1 - (n + b), e)
            for o, s, k, d, n, b, e in zip(outs, strides, kernel, dilations, sizes, pb, pe, strict=True)]
    padded = [n + b + e for n, b, e in zip(sizes, pb, ends, strict=True)]
    return Geometry(kernel, strides, dilations, [0] * len(sizes), False, torch_pad(pb, ends), pb, padded, outs)


def per_size(make: Callable[[list[int]], object]) -> Callable[[list[int]], object]:
    """``make`` memoized by spatial size (a plan sees few)."""
    cache: dict[tuple[int, ...], object] = {}

    def get(sizes: list[int]) -> object:
        key = tuple(sizes)
        if key not in cache:
            cache[key] = make(sizes)
        return cache[key]

    return get


def _flat_indices(idx: torch.Tensor, g: Geometry, shape: list[int], axis: int) -> torch.Tensor:
    """PyTorch's per-plane indices (into the padded plane) as the reference's: flat over ``shape[axis:]``."""
    if g.pad is not None:
        flat, rest = torch.zeros_like(idx), idx
        coords = []
        for size in reversed(g.padded):
            coords.append(rest % size)
            rest = rest // size
        for c, b, size in zip(reversed(coords), g.begin, shape[2:], strict=True):
            flat = flat * size + (c - b).clamp(0, size - 1)
        idx = flat
    if axis < 2:
        plane = int(np.prod(shape[2:]))
        n, c = shape[:2]
        ones = [1] * (len(shape) - 2)
        offsets = torch.arange(n * c if axis == 0 else c, device=idx.device) * plane
        idx = idx + offsets.reshape(*((n, c) if axis == 0 else (1, c)), *ones)
    return idx


def _pooling(node: Node, table: dict[int, Callable]) -> tuple[int, Callable] | None:
    """(spatial axes, the PyTorch op from ``table``) for a float pooling of static rank 3-5, else None."""
    n = spatial_count(node)
    return (n, table[n]) if n in table and float_node(node) else None


@gpu_kernel("MaxPool")
def max_pool(node: Node, device: torch.device) -> GpuKernel | None:
    found = _pooling(node, _MAX)
    if found is None:
        return None
    n, pool = found
    plan = per_size(lambda sizes: geometry(node, sizes))
    indices = node.get_output_size() > 1
    index_dtype = _INDEX[output_type(node, 1)] if indices else torch.int64
    axis = node.axis % (n + 2) if indices else 0

    def run(inputs: list) -> list:
        x = inputs[0]
        g: Geometry = plan(list(x.shape[2:]))  # type: ignore[assignment]
        xp = x if g.pad is None else F.pad(x, g.pad, value=float("-inf"))
        if not indices:
            return [pool(xp, g.kernel, g.strides, g.padding, g.dilations, g.ceil)]
        y, idx = pool(xp, g.kernel, g.strides, g.padding, g.dilations, g.ceil, return_indices=True)
        return [y, _flat_indices(idx, g, list(x.shape), axis).to(index_dtype)]

    return GpuKernel(run, "cudnn_pool")


@gpu_kernel("AvgPool")
def avg_pool(node: Node, device: torch.device) -> GpuKernel | None:
    found = _pooling(node, _AVG)
    if found is None:
        return None
    pool = found[1]
    include_pad = not node.exclude_pad

    def make(sizes: list[int]) -> tuple[Geometry, torch.Tensor | None]:
        g = geometry(node, sizes)
        if g.pad is None:
            return g, None
        # a window's sum over the padded input divided by the reference's count (inside the input, or inside the
        # explicitly padded input)
        _, _, _, pb, pe, _ = node.resolved(sizes)
        counts = window_counts(sizes, g.kernel, g.strides, g.dilations, pb, pe, g.outs, include_pad)
        factor = np.prod(g.kernel) / np.maximum(counts, 1)
        return g, torch.from_numpy(factor.astype(np.float32)).to(device)

    plan = per_size(make)

    def run(inputs: list) -> list:
        x = inputs[0]
        g, factor = plan(list(x.shape[2:]))  # type: ignore[misc]
        if factor is None:
            return [pool(x, g.kernel, g.strides, g.padding, g.ceil, include_pad)]
        y = pool(F.pad(x, g.pad), g.kernel, g.strides, 0, False, True)
        return [(y * factor).to(x.dtype)]

    return GpuKernel(run, "cudnn_pool")


def _adaptive_sizes(node: Node) -> list[int] | None:
    """The constant output sizes of a float adaptive pooling PyTorch has, else None."""
    sizes = constant_input(node, 1)
    if sizes is None or _pooling(node, _ADAPTIVE_AVG) is None:
        return None
    return [int(s) for s in np.asarray(sizes).reshape(-1)]


@gpu_kernel("AdaptiveAvgPool")
def adaptive_avg_pool(node: Node, device: torch.device) -> GpuKernel | None:
    sizes = _adaptive_sizes(node)
    if sizes is None:
        return None
    pool = _ADAPTIVE_AVG[len(sizes)]
    return GpuKernel(lambda x: [pool(x[0], sizes)], "cudnn_pool")


@gpu_kernel("AdaptiveMaxPool")
def adaptive_max_pool(node: Node, device: torch.device) -> GpuKernel | None:
    sizes = _adaptive_sizes(node)
    if sizes is None:
        return None
    pool = _ADAPTIVE_MAX[len(sizes)]
    index_dtype = _INDEX[output_type(node, 1)]

    def run(inputs: list) -> list:
        y, idx = pool(inputs[0], sizes, return_indices=True)
        return [y, idx.to(index_dtype)]

    return GpuKernel(run, "cudnn_pool")
