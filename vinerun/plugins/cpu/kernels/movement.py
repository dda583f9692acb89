"""Data-movement kernels on ATen: Gather, Concat, Transpose, constant Pad, TopK and CumSum.

Each factory accepts only what the ATen call reproduces exactly (constant axes, torch-native
dtypes, in-range indices) and leaves the rest to the NumPy reference.
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import TORCH_DTYPES, to_numpy, to_torch

_TORCH_TYPES = {"f32", "f16", "bf16", "f64", "i8", "u8", "i16", "i32", "i64", "boolean"}


def _native(node: Node, *inputs: int) -> bool:
    return all(node.get_input_element_type(i).get_type_name() in _TORCH_TYPES for i in inputs)


def _const_int(node: Node, i: int) -> int | None:
    v = node.const_input(i)
    return None if v is None or np.size(v) != 1 else int(np.asarray(v).reshape(-1)[0])


@cpu_kernel("Gather")
def gather(node: Node) -> Kernel | None:
    axis = _const_int(node, 2)
    if axis is None or node.batch_dims != 0 or not _native(node, 0):
        return None
    reference = node.evaluate

    def run(inputs):
        data, indices = inputs[0], np.asarray(inputs[1])
        if data.dtype not in TORCH_DTYPES:
            return reference(inputs)
        ax = axis + data.ndim if axis < 0 else axis
        size = data.shape[ax]
        idx = torch.from_numpy(indices.astype(np.int64, copy=True).reshape(-1))
        idx = torch.where(idx < 0, idx + size, idx)
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= size):
            return reference(inputs)  # out-of-range indices read as zeros there
        out = torch.index_select(to_torch(data), ax, idx)
        shape = data.shape[:ax] + indices.shape + data.shape[ax + 1:]
        return [to_numpy(out.reshape(shape))]

    return Kernel(run, "aten_index_select")


@cpu_kernel("Concat")
def concat(node: Node) -> Kernel | None:
    if not _native(node, *range(node.get_input_size())):
        return None
    axis = node.axis

    def run(inputs):
        ax = axis + inputs[0].ndim if axis < 0 else axis
        return [to_numpy(torch.cat([to_torch(x) for x in inputs], dim=ax))]

    return Kernel(run, "aten_cat")


@cpu_kernel("Transpose")
def transpose(node: Node) -> Kernel | None:
    order = node.const_input(1)
    if order is None or not _native(node, 0):
        return None
    perm = [int(a) for a in np.asarray(order).reshape(-1)]

    def run(inputs):
        x = inputs[0]
        p = perm or list(range(x.ndim))[::-1]
        t = to_torch(x).permute(p)
        return [to_numpy(t.clone() if t.is_contiguous() else t.contiguous())]

    return Kernel(run, "aten_permute")


@cpu_kernel("Pad")
def pad(node: Node) -> Kernel | None:
    begin, end = node.const_input(1), node.const_input(2)
    if node.pad_mode != "constant" or begin is None or end is None or not _native(node, 0):
        return None
    if node.get_input_element_type(0).get_type_name() == "boolean":
        return None
    begin = [int(v) for v in np.asarray(begin).reshape(-1)]
    end = [int(v) for v in np.asarray(end).reshape(-1)]
    widths = [w for b, e in zip(reversed(begin), reversed(end), strict=True) for w in (b, e)]

    def run(inputs):
        value = 0 if len(inputs) < 4 or inputs[3] is None else np.asarray(inputs[3]).reshape(-1)[0].item()
        out = torch.nn.functional.pad(to_torch(inputs[0]), widths, mode="constant", value=value)
        return [to_numpy(out.contiguous())]

    return Kernel(run, "aten_constant_pad_nd")


@cpu_kernel("TopK")
def top_k(node: Node) -> Kernel | None:
    k = _const_int(node, 1)
    kinds = {"f32", "f64", "i32", "i64"}
    if k is None or node.sort == "index" or node.get_input_element_type(0).get_type_name() not in kinds:
        return None
    largest = node.mode == "max"
    index_dtype = node.index_element_type.to_dtype()
    axis = node.axis

    def run(inputs):
        x = to_torch(inputs[0])
        ax = axis + x.dim() if axis < 0 else axis
        kk = min(k, x.shape[ax])
        # a stable sort keeps equal values in index order, as ONNX requires
        values, indices = torch.sort(x, dim=ax, descending=largest, stable=True)
        return [to_numpy(values.narrow(ax, 0, kk).contiguous()),
                to_numpy(indices.narrow(ax, 0, kk).contiguous()).astype(index_dtype)]

    return Kernel(run, "aten_sort")


@cpu_kernel("CumSum")
def cum_sum(node: Node) -> Kernel | None:
    axis = _const_int(node, 1) if node.get_input_size() > 1 else 0
    if axis is None or node.get_input_element_type(0).get_type_name() not in {"f32", "f64", "i32", "i64"}:
        return None
    exclusive, reverse = node.exclusive, node.reverse

    def run(inputs):
        x = to_torch(inputs[0])
        ax = axis + x.dim() if axis < 0 else axis
        if reverse:
            x = x.flip(ax)
        out = torch.cumsum(x, dim=ax, dtype=x.dtype)
        if exclusive and out.shape[ax]:
            shifted = out.narrow(ax, 0, out.shape[ax] - 1)
            out = torch.cat([torch.zeros_like(out.narrow(ax, 0, 1)), shifted], dim=ax)
        if reverse:
            out = out.flip(ax)
        return [to_numpy(out.contiguous())]

    return Kernel(run, "aten_cumsum")
