"""ATen kernels for float reductions, Softmax / LogSoftmax, ArgMax / ArgMin and Einsum.

Each kernel covers float tensors (f32, f64, f16, bf16) and hands empty tensors to the op's
reference, which owns the identity values of empty reductions. Small f32/f64 sums, means, maxima and minima
run NumPy's reductions (ATen's conversions and dispatch cost 6-11 us there, NumPy 1-3 us); f32/bf16 ones of
static shape get oneDNN's primitive (:mod:`.reduce_dnnl`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from vinerun.errors import VinerunError
from vinerun.ir.node import Node
from vinerun.ops.einsum import parse_equation
from vinerun.ops.reduction import normalize_axes
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Softmax
from vinerun.plugins.cpu.kernels._native import OutputLayout, dense_value, element_layout, single_primitive_kernel
from vinerun.plugins.cpu.kernels._torch import float_inputs, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.reduce_dnnl import dnnl_reduce_kernel


def _prod(x: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, dim=d, keepdim=keepdim)
    return x


_REDUCTIONS: dict[str, Callable[[torch.Tensor, list[int], bool], torch.Tensor]] = {
    "ReduceSum": lambda x, d, k: torch.sum(x, dim=d, keepdim=k),
    "ReduceMean": lambda x, d, k: torch.mean(x, dim=d, keepdim=k),
    "ReduceMax": lambda x, d, k: torch.amax(x, dim=d, keepdim=k),
    "ReduceMin": lambda x, d, k: torch.amin(x, dim=d, keepdim=k),
    "ReduceProd": _prod,
    "ReduceL1": lambda x, d, k: torch.linalg.vector_norm(x, ord=1, dim=d, keepdim=k),
    "ReduceL2": lambda x, d, k: torch.linalg.vector_norm(x, ord=2, dim=d, keepdim=k),
}


#: NumPy's reductions, keeping dims or not (a mean divides the sum by the count, as ATen's does)
_NUMPY: dict[str, np.ufunc] = {"ReduceSum": np.add, "ReduceMean": np.add, "ReduceMax": np.maximum,
                               "ReduceMin": np.minimum}
_NUMPY_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: at most this many elements the NumPy reductions take (measured on 2 Zen4 cores: even with ATen at 16k)
SMALL = 8192


def _fixed_axes(node: Node) -> list[int] | None:
    """The normalized axes when they are a Constant and the rank is static (else found per call)."""
    axes, rank = node.const_input(1), node.get_input_partial_shape(0).rank
    if axes is None or rank.is_dynamic:
        return None
    try:
        return normalize_axes(axes, rank.get_length(), node)
    except VinerunError:
        return None  # the call raises it, naming the node


@cpu_kernel(*_REDUCTIONS)
def reduction(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    op, keep, reference = _REDUCTIONS[node.type_name], bool(node.keep_dims), node.evaluate
    fixed = _fixed_axes(node)
    ufunc, mean = _NUMPY.get(node.type_name), node.type_name == "ReduceMean"

    def run(inputs):
        x, axes_in = inputs
        if x.size == 0:
            return reference(inputs)
        axes = fixed if fixed is not None else normalize_axes(axes_in, x.ndim, node)
        # C-contiguous results, also of a channels-last input (see _layout)
        if not axes:
            return [np.array(x, copy=True, order="C")]
        if all(x.shape[a] == 1 for a in axes):  # nothing to reduce: the values in the output's shape
            shape = x.shape if keep else tuple(d for a, d in enumerate(x.shape) if a not in axes)
            return [np.array(x, copy=True, order="C").reshape(shape)]
        if ufunc is not None and x.size <= SMALL and x.dtype in _NUMPY_TYPES and type(x) is np.ndarray:
            y = np.asarray(ufunc.reduce(x, axis=tuple(axes), keepdims=keep))  # a NumPy scalar for all axes
            if mean:
                y /= x.dtype.type(x.size // y.size)
            return [y if y.flags.c_contiguous else np.ascontiguousarray(y)]
        return [to_numpy(op(to_torch(x), axes, keep))]

    kernel = Kernel(run, f"aten_{node.type_name[len('Reduce'):].lower()}")
    return dnnl_reduce_kernel(node, kernel, fixed)


#: input layouts a Softmax makes primitives for
SOFTMAX_LAYOUTS = 4


@cpu_kernel("Softmax", "LogSoftmax")
def softmax(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    op, axis = (torch.softmax if node.type_name == "Softmax" else torch.log_softmax), node.axis

    def run(inputs):
        x = inputs[0]
        if x.size == 0:
            return [np.array(x, copy=True)]
        return [to_numpy(op(to_torch(x), axis))]

    kernel = Kernel(run, f"aten_{op.__name__}")
    return (dnnl_softmax_kernel(node, kernel) or kernel) if node.type_name == "Softmax" else kernel


def dnnl_softmax_kernel(node: Node, fallback: Kernel) -> Kernel | None:
    """oneDNN's softmax for a static-shape f32 / bf16 Softmax (a step of native segments: an int8 attention's
    Softmax sits between its int8 matmuls), or None."""
    lib = library()
    shape, dtype = node.get_input_partial_shape(0), np.dtype(node.get_input_element_type(0).to_dtype())
    if lib is None or not shape.is_static or dtype.name not in DATA_TYPES:
        return None
    dims = tuple(int(d) for d in shape.to_shape())
    if not dims or 0 in dims:
        return None
    out = dense_value(dims, dtype)
    axis = node.axis % len(dims)
    kernel = single_primitive_kernel(node, dims, OutputLayout(out, False),
                                     lambda x: Softmax(lib, element_layout(x), element_layout(out), axis),
                                     fallback.fn, "onednn_softmax", SOFTMAX_LAYOUTS)
    return kernel if kernel.native is not None and kernel.native([None]) is not None else None


@cpu_kernel("ArgMax", "ArgMin")
def arg_reduce(node: Node) -> Kernel | None:
    if not float_inputs(node, 0):
        return None
    op = torch.argmax if node.type_name == "ArgMax" else torch.argmin
    axis, keep, last, reference = node.axis, bool(node.keepdims), bool(node.select_last_index), node.evaluate

    def run(inputs):
        x = inputs[0]
        if x.size == 0:
            return reference(inputs)
        t = to_torch(x)
        if not last:
            return [to_numpy(op(t, dim=axis, keepdim=keep))]
        idx = op(torch.flip(t, dims=[axis]), dim=axis, keepdim=keep)
        return [to_numpy(t.shape[axis] - 1 - idx)]

    return Kernel(run, f"aten_{op.__name__}")


@cpu_kernel("Einsum")
def einsum(node: Node) -> Kernel | None:
    if not float_inputs(node, *range(node.get_input_size())):
        return None
    equation = parse_equation(node.equation).equation()

    def run(inputs):
        return [to_numpy(torch.einsum(equation, *[to_torch(x) for x in inputs]))]

    return Kernel(run, "aten_einsum")
