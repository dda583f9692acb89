"""Reductions and orderings: Reduce*, TopK, CumSum / CumProd.

Integer sums and products wrap in their type as NumPy's (modular arithmetic: the order does not matter); f16 /
bf16 sums accumulate in f32 as the references widen them (the order of additions differs: within a few ulps).
Max / Min over an empty axis give the type's lowest / highest value, as the reference's ``initial``. TopK sorts
stably, so ties keep index order and NaN counts as the largest value, as NumPy's ``argsort``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from vinerun.ir.node import Node
from vinerun.ops._base import normalize_axis
from vinerun.ops.reduction import normalize_axes
from vinerun.plugins.gpu.kernels import FLOAT_TYPES, TORCH_DTYPES, GpuKernel, gpu_kernel, input_type, output_type
from vinerun.plugins.gpu.kernels._operands import int_operand
from vinerun.plugins.gpu.kernels.elementwise import INT_TYPES

Reduce = Callable[[torch.Tensor, list[int]], torch.Tensor]


def _limit(x: torch.Tensor, highest: bool) -> float | int | bool:
    if x.dtype == torch.bool:
        return highest
    if x.is_floating_point():
        return math.inf if highest else -math.inf
    info = torch.iinfo(x.dtype)
    return info.max if highest else info.min


def _extreme(is_min: bool) -> Reduce:
    """ReduceMin or ReduceMax; an empty axis gives the start value (the type's highest / lowest)."""

    def run(x: torch.Tensor, axes: list[int]) -> torch.Tensor:
        if any(x.shape[a] == 0 for a in axes):
            shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
            return torch.full(shape, _limit(x, is_min), dtype=x.dtype, device=x.device)
        if x.dtype == torch.bool:
            return torch.all(x, dim=axes, keepdim=True) if is_min else torch.any(x, dim=axes, keepdim=True)
        return torch.amin(x, dim=axes, keepdim=True) if is_min else torch.amax(x, dim=axes, keepdim=True)

    return run


def _mean(x: torch.Tensor, axes: list[int]) -> torch.Tensor:
    if x.is_floating_point():
        return torch.mean(x, dim=axes, keepdim=True)
    count = max(math.prod(x.shape[a] for a in axes), 1)
    total = torch.sum(x, dim=axes, keepdim=True, dtype=torch.int64)
    return torch.div(total, count, rounding_mode="trunc").to(x.dtype)


_REDUCE: dict[str, Reduce] = {
    "ReduceSum": lambda x, a: torch.sum(x, dim=a, keepdim=True, dtype=x.dtype),
    "ReduceMean": _mean,
    "ReduceProd": lambda x, a: _prod(x, a),
    "ReduceMax": _extreme(is_min=False),
    "ReduceMin": _extreme(is_min=True),
    "ReduceL1": lambda x, a: torch.sum(torch.abs(x), dim=a, keepdim=True, dtype=x.dtype),
    "ReduceL2": lambda x, a: _l2(x, a),
    "ReduceLogicalAnd": lambda x, a: torch.all(x, dim=a, keepdim=True),
    "ReduceLogicalOr": lambda x, a: torch.any(x, dim=a, keepdim=True),
}
_TYPES = {"ReduceL2": FLOAT_TYPES, "ReduceLogicalAnd": ("boolean",), "ReduceLogicalOr": ("boolean",),
          "ReduceMax": FLOAT_TYPES + INT_TYPES + ("boolean",), "ReduceMin": FLOAT_TYPES + INT_TYPES + ("boolean",)}


def _l2(x: torch.Tensor, axes: list[int]) -> torch.Tensor:
    """The Euclidean norm; f16 / bf16 squares and sums in f32, as the reference widens them."""
    acc = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    return torch.linalg.vector_norm(x, 2, dim=axes, keepdim=True, dtype=acc).to(x.dtype)


def _prod(x: torch.Tensor, axes: list[int]) -> torch.Tensor:
    """A product over several axes (torch's ``prod`` takes one): the axes moved last and flattened."""
    rest = [i for i in range(x.ndim) if i not in axes]
    y = x.permute(rest + axes).reshape([x.shape[i] for i in rest] + [-1]).prod(-1, dtype=x.dtype)
    return y.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])


@gpu_kernel(*_REDUCE)
def reduce(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) not in _TYPES.get(node.type_name, FLOAT_TYPES + INT_TYPES):
        return None
    axes_op, keep, fn = int_operand(node, 1), node.keep_dims, _REDUCE[node.type_name]

    def run(x: list) -> list:
        t = x[0]
        axes = normalize_axes(axes_op.get(x), t.ndim, node)
        if not axes:
            return [t.clone()]
        out = fn(t, axes)
        return [out if keep else out.reshape([d for i, d in enumerate(t.shape) if i not in axes])]

    return GpuKernel(run, f"gpu_{node.type_name.lower()}", host=axes_op.host)


@gpu_kernel("TopK")
def topk(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) not in FLOAT_TYPES + INT_TYPES or output_type(node, 1) not in ("i32", "i64"):
        return None
    k_op, largest, by_index = int_operand(node, 1), node.mode == "max", node.sort == "index"
    index_dtype = TORCH_DTYPES[output_type(node, 1)]

    def run(x: list) -> list:
        t = x[0]
        axis = normalize_axis(node.axis, t.ndim, node)
        k = min(k_op.get(x)[0], t.shape[axis])
        order = torch.sort(t, dim=axis, descending=largest, stable=True).indices.narrow(axis, 0, k)
        if by_index:
            order = torch.sort(order, dim=axis).values
        return [torch.gather(t, axis, order), order.to(index_dtype)]

    return GpuKernel(run, "gpu_topk", host=k_op.host)


@gpu_kernel("CumSum", "CumProd")
def cumulative(node: Node, device: torch.device) -> GpuKernel | None:
    if input_type(node, 0) not in FLOAT_TYPES + INT_TYPES:
        return None
    axis_op, exclusive, reverse = int_operand(node, 1), node.exclusive, node.reverse
    product = node.type_name == "CumProd"

    def run(x: list) -> list:
        t = x[0]
        axis = normalize_axis(0 if axis_op is None else axis_op.get(x)[0], t.ndim, node)
        y = t.flip(axis) if reverse else t
        out = torch.cumprod(y, axis, dtype=t.dtype) if product else torch.cumsum(y, axis, dtype=t.dtype)
        if exclusive:
            first = torch.full_like(out.narrow(axis, 0, min(1, out.shape[axis])), 1 if product else 0)
            out = torch.cat([first, out.narrow(axis, 0, max(out.shape[axis] - 1, 0))], axis)
        return [out.flip(axis) if reverse else out]

    return GpuKernel(run, f"gpu_{node.type_name.lower()}", host=axis_op is not None and axis_op.host)
