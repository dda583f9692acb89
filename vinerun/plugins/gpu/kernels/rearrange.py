"""Rearranging kernels: Pad, DepthToSpace, SpaceToDepth, Roll, ReverseSequence and Trilu.

Index maps are computed on the device (``arange`` and arithmetic), so these kernels are captured in CUDA graphs:
edge / reflect / symmetric padding gathers each padded axis through the periodic index map NumPy's ``np.pad``
follows, and ReverseSequence gathers along the sequence axis by per-batch lengths read on the device.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ops._base import normalize_axis
from vinerun.ops._shape_helpers import normalize_axes
from vinerun.plugins.gpu.kernels import GpuKernel, constant_input, gpu_kernel, torch_types
from vinerun.plugins.gpu.kernels._operands import any_host, int_operand


def _check_pads(shape: tuple[int, ...], begin: list[int], end: list[int], mode: str) -> None:
    """The reference's checks: one pad per axis, crops within the axis, reflections within the data."""
    if len(begin) != len(shape) or len(end) != len(shape):
        raise ValidationError(f"pads_begin {begin} and pads_end {end} must have one value per axis ({len(shape)})")
    for n, b, e in zip(shape, begin, end, strict=True):
        kept = n + min(b, 0) + min(e, 0)
        if kept < 0:
            raise ValidationError(f"pads ({b}, {e}) crop more than the whole axis of size {n}")
        limit = kept - 1 if mode == "reflect" else kept
        if mode in ("reflect", "symmetric") and max(b, e, 0) > limit:
            raise ValidationError(f"{mode} padding of ({b}, {e}) is too large for an axis of size {kept}")
        if mode != "constant" and kept == 0 and (b > 0 or e > 0):
            raise ValidationError(f"{mode} padding needs a non-empty input")


def _source_index(n: int, b: int, e: int, mode: str, device: torch.device) -> torch.Tensor:
    """For each position of a padded axis, the position of the data it copies (as ``np.pad``)."""
    i = torch.arange(-b, n + e, device=device)
    if mode == "edge":
        return i.clamp(0, n - 1)
    period = 2 * (n - 1) if mode == "reflect" else 2 * n
    j = torch.remainder(i, period)
    return torch.where(j >= n, period - j - int(mode == "symmetric"), j)


def _pad(x: torch.Tensor, begin: list[int], end: list[int], mode: str, value: torch.Tensor | float) -> torch.Tensor:
    _check_pads(tuple(x.shape), begin, end, mode)
    x = x[tuple(slice(max(-b, 0), n - max(-e, 0)) for n, b, e in zip(x.shape, begin, end, strict=True))]
    grow = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=True)]
    if mode == "constant":
        if isinstance(value, torch.Tensor):  # a fill value computed in the graph: fill, then copy the data in
            out = value.reshape(()).expand([n + b + e for n, (b, e) in zip(x.shape, grow, strict=True)]).clone()
            out[tuple(slice(b, b + n) for n, (b, _) in zip(x.shape, grow, strict=True))] = x
            return out
        return F.pad(x, [p for b, e in reversed(grow) for p in (b, e)], value=value)
    for axis, (b, e) in enumerate(grow):
        if b or e:
            x = x.index_select(axis, _source_index(x.shape[axis], b, e, mode, x.device))
    return x.contiguous()


@gpu_kernel("Pad")
def pad(node: Node, device: torch.device) -> GpuKernel | None:
    if not torch_types(node):
        return None
    begin_op, end_op, mode = int_operand(node, 1), int_operand(node, 2), node.pad_mode
    value: float | bool | None = 0
    if node.get_input_size() > 3 and node.input_value(3) is not None:
        const = constant_input(node, 3)
        value = None if const is None else const.reshape(()).item()

    def run(x: list) -> list:
        fill = x[3] if value is None else value
        return [_pad(x[0], begin_op.get(x), end_op.get(x), mode, fill)]

    return GpuKernel(run, f"gpu_pad_{mode}", host=any_host(begin_op, end_op))


def _block_rearrange(node: Node, x: torch.Tensor) -> torch.Tensor:
    """DepthToSpace / SpaceToDepth as a reshape, a permutation and a reshape (the reference's orders)."""
    n, c, *sp = x.shape
    k, bs, blocks_first = len(sp), node.block_size, node.mode == "blocks_first"
    if node.type_name == "DepthToSpace":
        if blocks_first:
            y = x.reshape([n] + [bs] * k + [c // bs**k] + sp)
            order = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
        else:
            y = x.reshape([n, c // bs**k] + [bs] * k + sp)
            order = [0, 1] + [a for i in range(k) for a in (k + 2 + i, 2 + i)]
        return y.permute(order).reshape([n, c // bs**k] + [d * bs for d in sp])
    y = x.reshape([n, c] + [v for d in sp for v in (d // bs, bs)])
    blocks, outer = [3 + 2 * i for i in range(k)], [2 + 2 * i for i in range(k)]
    order = [0] + (blocks + [1] if blocks_first else [1] + blocks) + outer
    return y.permute(order).reshape([n, c * bs**k] + [d // bs for d in sp])


@gpu_kernel("DepthToSpace", "SpaceToDepth")
def block_rearrange(node: Node, device: torch.device) -> GpuKernel | None:
    def run(x: list) -> list:
        t = x[0]
        k, bs = t.ndim - 2, node.block_size
        if node.type_name == "DepthToSpace" and t.shape[1] % bs**k:
            raise ValidationError(f"channels ({t.shape[1]}) must be divisible by block_size^{k} = {bs**k}")
        if node.type_name == "SpaceToDepth" and any(d % bs for d in t.shape[2:]):
            raise ValidationError(f"spatial dims {list(t.shape[2:])} are not divisible by block_size {bs}")
        return [_block_rearrange(node, t).contiguous()]

    return GpuKernel(run, f"gpu_{node.type_name.lower()}")


@gpu_kernel("Roll")
def roll(node: Node, device: torch.device) -> GpuKernel | None:
    shift_op, axes_op = int_operand(node, 1), int_operand(node, 2)

    def run(x: list) -> list:
        t, shifts, axes = x[0], shift_op.get(x), axes_op.get(x)
        if t.ndim == 0:
            return [t.clone()]
        shifts = shifts * len(axes) if len(shifts) == 1 else shifts
        if len(shifts) != len(axes):
            raise ValidationError(f"shift has {len(shifts)} values for {len(axes)} axes")
        dims = [normalize_axes([a], t.ndim)[0] for a in axes]
        return [torch.roll(t, shifts, dims) if dims else t.clone()]

    return GpuKernel(run, "gpu_roll", host=any_host(shift_op, axes_op))


@gpu_kernel("ReverseSequence")
def reverse_sequence(node: Node, device: torch.device) -> GpuKernel | None:
    def run(x: list) -> list:
        t, lengths = x[0], x[1].reshape(-1).to(torch.int64)
        b, s = normalize_axis(node.batch_axis, t.ndim, node), normalize_axis(node.seq_axis, t.ndim, node)
        if lengths.numel() != t.shape[b]:
            raise ValidationError(f"seq_lengths has {lengths.numel()} values for a batch of {t.shape[b]}")
        pos = torch.arange(t.shape[s], device=t.device)
        n = lengths.clamp(0, t.shape[s])[:, None]
        src = torch.where(pos[None, :] < n, n - 1 - pos[None, :], pos[None, :])  # [batch, seq]
        shape = [1] * t.ndim
        shape[b], shape[s] = t.shape[b], t.shape[s]
        src = src if b < s else src.T
        return [torch.gather(t, s, src.reshape(shape).expand(t.shape))]

    return GpuKernel(run, "gpu_reverse_sequence")


@gpu_kernel("Trilu")
def trilu(node: Node, device: torch.device) -> GpuKernel | None:
    upper = node.upper

    def run(x: list) -> list:
        t = x[0]
        k = 0 if len(x) < 2 or x[1] is None else x[1].reshape(())
        rows, cols = t.shape[-2:]
        offset = torch.arange(cols, device=t.device)[None, :] - torch.arange(rows, device=t.device)[:, None]
        keep = offset >= k if upper else offset <= k
        return [torch.where(keep, t, torch.zeros((), dtype=t.dtype, device=t.device))]

    return GpuKernel(run, "gpu_trilu")
