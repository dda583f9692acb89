"""f32 and bf16 Transpose of static shape by a constant order, as a oneDNN reorder (:class:`._dnnl_ops.Reorder`).

A transposition is a copy from the input seen through permuted strides into a C-contiguous output: oneDNN's
jit reorder does it several times faster than NumPy's strided copy on image-sized tensors (an NCHW image to
NHWC: 29 us against 183 us, 1 thread), takes a channels-last input as it is (a convolution's output going to an
NHWC model output is one pass) and, being one primitive, stays inside a native segment. A primitive is made
per input layout a call brings (at most :data:`LAYOUTS`); others, and every other Transpose, run NumPy's copy.

Where the input seen through the permuted strides is already C-contiguous (a channels-last convolution output
permuted to NHWC, as ConvNeXt and Keras exports write ``x.permute(0, 2, 3, 1)``; an NHWC result permuted back
to NCHW for the next convolution, which reads it channels-last), the transposition is a view: no copy, in
Python and in a native segment. A channels-last result is a view only where every reader takes channels-last
data (:func:`._layout.keeps_channels_last`).
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import LAYOUT_TYPES, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Reorder
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    OutputLayout,
    ValueLayout,
    arriving_layout,
    channels_last_value,
    dense_value,
    element_layout,
    layout_of_value,
    single_primitive_kernel,
    tidy,
)

#: input layouts a Transpose makes reorders for
LAYOUTS = 4


@cpu_kernel("Transpose")
def dnnl_transpose(node: Node) -> Kernel | None:
    """The kernel for an f32 / bf16 / int8 Transpose of static shape by a constant order, or None (NumPy's copy
    runs)."""
    lib = library()
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    dt = LAYOUT_TYPES.get(dtype.name)
    xs, ys = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    order = node.const_input(1)
    if order is not None and xs.rank.is_static and not (xs.is_static and ys.is_static):
        return _dynamic_transpose(node, order, xs.rank.get_length())
    if lib is None or dt is None or order is None or not xs.is_static or not ys.is_static:
        return None
    shape = tuple(int(d) for d in xs.to_shape())
    out = tuple(int(d) for d in ys.to_shape())
    perm = permutation(order, len(shape))
    if not shape or 0 in shape or perm is None:
        return None
    out_value = dense_value(out, dtype)

    def permuted(x: ValueLayout) -> ValueLayout:
        """The input seen through the permuted strides."""
        return out, tuple(x[1][a] for a in perm), dtype

    def transposition(x: ValueLayout) -> Reorder:
        """A copy of the permuted input into a C-contiguous output."""
        return Reorder(lib, element_layout(permuted(x)), element_layout(out_value))

    kernel = single_primitive_kernel(node, shape, OutputLayout(out_value, False), transposition,
                                     lambda inputs: [np.ascontiguousarray(np.transpose(inputs[0], perm))],
                                     "onednn_transpose", LAYOUTS)
    copy, copy_native = kernel.fn, kernel.native

    # a 4-D result read only by kernels that take channels-last data may be a channels-last view
    # (tidied, as readers expect it): dimensions of size 1 may have any stride
    views = {tidy(lay): lay for lay in [out_value] + ([channels_last_value(out, dtype)] if keeps_channels_last(node)
                                                      else [])}

    def run(inputs: list) -> list:
        view = np.transpose(inputs[0], perm)
        return [view] if tidy(layout_of_value(view)) in views else copy(inputs)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        x = layouts[0] or arriving_layout(node, 0, shape, dtype)
        seen = views.get(tidy(permuted(x)))
        if seen is not None:  # the input's bytes are the output: a view
            return NativeStep(None, lambda threads: None, [Buffer(False, 0, x), Buffer(True, 0, seen)])
        return copy_native(layouts)

    kernel.fn, kernel.native = run, native
    kernel.may_view = True  # type: ignore[attr-defined]  # its output can be its input's memory (Plan.run copies)
    return kernel


def permutation(order: np.ndarray, rank: int) -> list[int] | None:
    """A Transpose's constant order as axes (empty: reversed), or None when it is not a permutation of ``rank``
    axes (the reference's error names it)."""
    order = np.asarray(order).reshape(-1)
    perm = [int(a) % rank for a in order] if order.size else list(reversed(range(rank)))
    return perm if sorted(perm) == list(range(rank)) else None


def _dynamic_transpose(node: Node, order: np.ndarray, rank: int) -> Kernel | None:
    """A Transpose of a dynamic shape by a constant order (a decoder's head split with a growing KV cache): NumPy's
    copy with the order checked once here, not per call."""
    perm = permutation(order, rank)
    if perm is None:
        return None

    def run(inputs: list) -> list:
        return [np.ascontiguousarray(np.transpose(inputs[0], perm))]

    return Kernel(run, "numpy_transpose")
