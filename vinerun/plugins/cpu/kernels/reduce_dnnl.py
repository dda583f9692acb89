"""f32 and bf16 ReduceMean / ReduceSum / ReduceMax / ReduceMin of static shape over constant axes through
oneDNN's reduction primitive (:class:`._dnnl_ops.Reduction`), as a step of native segments.

oneDNN (3.2) has a fast reduction only over the innermost axes of a dense array: the kernel takes an input
whose reduced axes are the last in memory (the last axes of a C-contiguous array, the channels of a
channels-last one) and hands out a C-contiguous result (``keep_dims`` only changes the shape). A reduction
over axes of size 1 only copies: a view inside segments. That kernel costs ~0.2 us per row it keeps (one thread,
2023.2 on an AMX Xeon: 2.3 ms for 26k rows of 2, where ATen takes 0.1 ms), so only reductions to at most
:data:`MAX_ROWS` values take it. Called from Python, arrays of at most :data:`SMALL` elements keep the given kernel
(NumPy there). oneDNN adds in another order than ATen and NumPy: sums and means of
small arrays get bits apart from Python and in a segment (maxima and minima are exact).
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, Library, PrimitiveCache, library
from vinerun.plugins.cpu.kernels._dnnl_ops import (
    REDUCTION_MEAN,
    REDUCTION_SUM,
    Layout,
    Reduction,
    Reorder,
    dense,
)
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    OutputLayout,
    ValueLayout,
    arriving_layout,
    dense_value,
    element_layout,
    output_layout,
    single_primitive_kernel,
)

#: not ReduceMax / ReduceMin: oneDNN's drop a NaN (its max instructions return the other operand) where the
#: reference and ATen propagate it (ONNX's expanded Attention relies on that to find fully masked rows)
ALGORITHMS = {"ReduceMean": REDUCTION_MEAN, "ReduceSum": REDUCTION_SUM}
#: input layouts a node makes primitives for
LAYOUTS = 4
#: at most this many input elements a call from Python keeps the given kernel (2 Zen4 cores: oneDNN from Python costs
#: 5-8 us, NumPy 1-5 us up to 8k elements, ATen 5-8 us)
SMALL = 8192
#: at most this many kept values (rows) a oneDNN reduction makes: its cost grows by ~0.2 us a row (ATen's by ~5 ns),
#: so at 64 rows it is about ATen's plus the Python step a segment would break for
MAX_ROWS = 64


def innermost(x: ValueLayout, axes: list[int]) -> tuple[Layout, Layout] | None:
    """oneDNN's (source, destination) layouts reducing ``axes`` of ``x`` as one dense array whose reduced axes
    are the innermost, the kept ones in order (so the destination is C-contiguous); None for other layouts."""
    shape, strides, dtype = x
    dt = DATA_TYPES[dtype.name]
    order = sorted((a for a in range(len(shape)) if shape[a] > 1), key=lambda a: -strides[a])
    step = dtype.itemsize
    for a in reversed(order):  # dense: each stride the product of the sizes inside it
        if strides[a] != step:
            return None
        step *= shape[a]
    kept = [a for a in order if a not in axes]
    if kept != sorted(kept) or order != kept + [a for a in order if a in axes]:
        return None
    src = tuple(shape[a] for a in order)
    return dense(src, dt), dense(tuple(shape[a] for a in kept) + (1,) * (len(order) - len(kept)), dt)


def dnnl_reduce_kernel(node: Node, fallback: Kernel, axes: list[int] | None) -> Kernel:
    """``fallback`` with a oneDNN path (and a native form) where ``node`` is an f32/bf16 ReduceMean, -Sum, -Max or
    -Min of static shape over the (normalized, constant) ``axes``."""
    lib = library()
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    shape, out = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    if (lib is None or dtype.name not in DATA_TYPES or node.type_name not in ALGORITHMS or not axes
            or not shape.is_static or not out.is_static):
        return fallback
    in_shape = tuple(int(d) for d in shape.to_shape())
    out_shape = tuple(int(d) for d in out.to_shape())
    size = int(np.prod(in_shape))
    if size == 0:
        return fallback
    out_value = _handed_layout(node, out_shape, dtype)
    algorithm = ALGORITHMS[node.type_name]
    if all(in_shape[a] == 1 for a in axes):
        return _copy_kernel(lib, node, fallback, in_shape, out_value)

    if int(np.prod([d for a, d in enumerate(in_shape) if a not in axes])) > MAX_ROWS:
        return fallback

    def make(x: ValueLayout) -> Reduction | None:
        layouts = innermost(x, axes)
        return None if layouts is None else Reduction(lib, *layouts, algorithm)

    kernel = single_primitive_kernel(node, in_shape, OutputLayout(out_value, False), make, fallback.fn,
                                     fallback.exec_type, LAYOUTS, small=SMALL)
    if size > SMALL and kernel.native is not None and kernel.native([None]) is not None:
        kernel.exec_type = "onednn_reduce_" + node.type_name[len("Reduce"):].lower()
    return kernel


def _handed_layout(node: Node, shape: tuple[int, ...], dtype: np.dtype) -> ValueLayout:
    """The C-contiguous layout of output ``shape``, named channels-last where its readers take that and it is the
    same memory (channels or height and width of size 1): the next convolution's native form reads that name."""
    flat, out = dense_value(shape, dtype), output_layout(node, shape, dtype).value
    return out if all(a == b for d, a, b in zip(shape, out[1], flat[1], strict=True) if d > 1) else flat


def _copy_kernel(lib: Library, node: Node, fallback: Kernel, in_shape: tuple[int, ...], out: ValueLayout) -> Kernel:
    """A reduction over axes of size 1: the input's values in the output's shape. Inside a segment a view of a
    C-contiguous input, else a oneDNN reorder into a C-contiguous array."""
    dtype = out[2]
    flat = dense_value(in_shape, dtype)
    reorders = PrimitiveCache(lambda x: Reorder(lib, element_layout(x), element_layout(flat)), LAYOUTS)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        x = layouts[0] or arriving_layout(node, 0, in_shape, dtype)
        if x == flat:
            return NativeStep(None, lambda threads: None, [Buffer(False, 0, flat), Buffer(True, 0, out)])
        if x[2] != dtype or min(x[1], default=0) < 0:
            return None
        op = reorders.get(x)
        return None if op is None else NativeStep(op, lambda threads: threads,
                                                  [Buffer(False, 0, x), Buffer(True, 0, out)])

    kernel = Kernel(fallback.fn, fallback.exec_type)
    kernel.native = native
    return kernel
