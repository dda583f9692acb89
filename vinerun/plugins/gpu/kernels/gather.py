"""Indexing kernels: Gather, GatherElements, GatherND, OneHot and the Scatter*Update family.

Gather gives zeros for indices out of range (as the reference) by masking on the device. GatherElements and
GatherND raise on an index out of range: constant indices are checked once, at compile time; indices computed
in the graph are checked per run on the host (``host=True``: a CUDA gather with a bad index would kill the
context). Scatters take constant indices without repeated targets (torch's CUDA scatters leave the order of
repeated writes undefined); others, and the ``mean`` reduction, run on the host.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ops._base import normalize_axis
from vinerun.plugins.gpu.kernels import GpuKernel, constant_input, gpu_kernel, to_device, torch_types
from vinerun.plugins.gpu.kernels._operands import int_operand


def _wrapped(idx: torch.Tensor, size: int | torch.Tensor) -> torch.Tensor:
    idx = idx.to(torch.int64)
    return torch.where(idx < 0, idx + size, idx)


@gpu_kernel("Gather")
def gather(node: Node, device: torch.device) -> GpuKernel | None:
    axis_op, batch_dims = int_operand(node, 2), node.batch_dims

    def run(x: list) -> list:
        data, indices = x[0], x[1]
        axis = normalize_axis(axis_op.get(x)[0], data.ndim, node)
        b = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
        if not 0 <= b <= indices.ndim or axis < b:
            raise ValidationError(f"batch_dims {batch_dims} does not fit axis {axis} and indices of rank "
                                  f"{indices.ndim}")
        size = data.shape[axis]
        idx = _wrapped(indices, size)
        ok = (idx >= 0) & (idx < size)
        idx = torch.where(ok, idx, torch.zeros_like(idx))
        # data [B, pre, size, post] and indices [B, I] -> [B, pre, I, post]
        nb, pre = math.prod(data.shape[:b]), math.prod(data.shape[b:axis])
        d = data.reshape(nb, pre, size, -1)
        i = idx.reshape(nb, 1, -1, 1).expand(nb, pre, -1, d.shape[3])
        m = ok.reshape(nb, 1, -1, 1)
        taken = torch.where(m, torch.gather(d, 2, i), torch.zeros((), dtype=data.dtype, device=data.device))
        out_shape = data.shape[:axis] + indices.shape[b:] + data.shape[axis + 1:]
        return [taken.reshape(out_shape)]

    return GpuKernel(run, "gpu_gather", host=axis_op.host)


def _checked(node: Node, check: Callable[[list], None], run: Callable[[list], list], name: str) -> GpuKernel | None:
    """``run``, with ``check`` per run on the host; constant indices into a static shape are checked once, here
    (indices out of range: None, and the reference raises its error at run time)."""
    indices, data = constant_input(node, 1), node.get_input_partial_shape(0)
    if indices is None or not data.is_static:
        def checked(x: list) -> list:
            check(x)
            return run(x)

        return GpuKernel(checked, name, host=True)
    try:
        check([torch.empty(data.to_shape(), device="meta"), torch.from_numpy(np.asarray(indices))])
    except ValidationError:
        return None
    return GpuKernel(run, name)


def _in_range(idx: torch.Tensor, sizes: torch.Tensor | int) -> None:
    if not bool(((idx >= 0) & (idx < sizes)).all()):
        raise ValidationError("an index is out of range")


@gpu_kernel("GatherElements")
def gather_elements(node: Node, device: torch.device) -> GpuKernel | None:
    def check(x: list) -> None:
        axis = normalize_axis(node.axis, x[0].ndim, node)
        _in_range(_wrapped(x[1], x[0].shape[axis]), x[0].shape[axis])

    def run(x: list) -> list:
        axis = normalize_axis(node.axis, x[0].ndim, node)
        return [torch.gather(x[0], axis, _wrapped(x[1], x[0].shape[axis]))]

    return _checked(node, check, run, "gpu_gather_elements")


def _nd_positions(data: torch.Tensor, indices: torch.Tensor, b: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """GatherND's flat positions: ``(data as [B, rows, tail], positions [B, n], m)`` (no host copies: the sizes
    and strides are Python numbers, so this is captured in CUDA graphs)."""
    m = indices.shape[-1]
    nb = math.prod(data.shape[:b])
    idx = indices.reshape(nb, -1, m)
    flat = torch.zeros(idx.shape[:2], dtype=torch.int64, device=idx.device)
    for j in range(m):
        flat += _wrapped(idx[..., j], data.shape[b + j]) * math.prod(data.shape[b + j + 1:b + m])
    return data.reshape(nb, math.prod(data.shape[b:b + m]), -1), flat, m


@gpu_kernel("GatherND")
def gather_nd(node: Node, device: torch.device) -> GpuKernel | None:
    b, v5 = node.batch_dims, node.version == "opset5"
    if node.get_input_partial_shape(1).rank.is_dynamic:
        return None

    def check(x: list) -> None:
        m = x[1].shape[-1]
        sizes = torch.tensor(x[0].shape[b:b + m], dtype=torch.int64)
        _in_range(_wrapped(x[1].cpu(), sizes), sizes)

    def run(x: list) -> list:
        data, indices = x
        d, flat, m = _nd_positions(data, indices, b)
        out = torch.gather(d, 1, flat.unsqueeze(-1).expand(-1, -1, d.shape[2]))
        shape = tuple(indices.shape[:-1]) + tuple(data.shape[b + m:])
        out = out.reshape(shape)
        return [out.reshape((-1,) + out.shape[b:]) if v5 and b > 1 else out]

    return _checked(node, check, run, "gpu_gather_nd")


@gpu_kernel("OneHot")
def one_hot(node: Node, device: torch.device) -> GpuKernel | None:
    depth_op = int_operand(node, 1)
    if not torch_types(node) or node.negative_indices_mode not in ("ignore_negative", "normalize"):
        return None
    normalize = node.negative_indices_mode == "normalize"

    def run(x: list) -> list:
        idx, depth, on, off = x[0].to(torch.int64), depth_op.get(x)[0], x[2], x[3]
        if normalize:
            idx = torch.where(idx < 0, idx + depth, idx)
        axis = normalize_axis(node.axis, idx.ndim + 1, node)
        hot = idx.unsqueeze(axis) == torch.arange(depth, device=idx.device).reshape([-1] + [1] * (idx.ndim - axis))
        return [torch.where(hot, on.reshape(()), off.reshape(()))]

    return GpuKernel(run, "gpu_one_hot", host=depth_op.host)


def _scatter_positions(node: Node) -> np.ndarray | None:
    """The flat data positions a scatter with constant indices writes (one per update element), in the
    reference's order, or None when unknown or repeated (then the host runs it)."""
    data = node.get_input_partial_shape(0)
    upd = node.get_input_partial_shape(2)
    if constant_input(node, 1) is None or not data.is_static or not upd.is_static:
        return None
    if node.type_name != "ScatterNDUpdate" and constant_input(node, 3) is None:
        return None
    shape = [int(d) for d in data.to_shape()]
    probe = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    marks = -1 - np.arange(math.prod(int(d) for d in upd.to_shape()), dtype=np.int64).reshape(upd.to_shape())
    consts = [constant_input(node, i) for i in range(3, node.get_input_size())]
    attrs = node.get_attributes()
    if "reduction" in attrs:
        attrs["reduction"] = "none"
    plain = type(node)(*node.input_values(), **attrs)  # writes without combining: each update lands once
    (written,) = plain.evaluate([probe, constant_input(node, 1), marks] + consts)
    pos = np.full(marks.size, -1, np.int64)
    flat = written.reshape(-1)
    hit = np.nonzero(flat < 0)[0]
    pos[-1 - flat[hit]] = hit
    if (pos < 0).any():  # an update lost to a later one at the same position, or not written at all
        return None
    return pos


_REDUCE = {"none": None, "sum": "sum", "prod": "prod", "min": "amin", "max": "amax"}


@gpu_kernel("ScatterUpdate", "ScatterElementsUpdate", "ScatterNDUpdate")
def scatter(node: Node, device: torch.device) -> GpuKernel | None:
    reduction = getattr(node, "reduction", "none")
    if not torch_types(node) or reduction not in _REDUCE:
        return None
    pos = _scatter_positions(node)
    if pos is None:
        return None
    where = to_device(pos, device)
    keep_init = getattr(node, "use_init_val", True)

    def run(x: list) -> list:
        out = x[0].reshape(-1).clone()
        upd = x[2].reshape(-1).to(out.dtype)
        if _REDUCE[reduction] is None or not keep_init:
            out.index_copy_(0, where, upd)
        else:
            out.scatter_reduce_(0, where, upd, _REDUCE[reduction], include_self=True)
        return [out.reshape(x[0].shape)]

    return GpuKernel(run, f"gpu_{node.type_name.lower()}")
