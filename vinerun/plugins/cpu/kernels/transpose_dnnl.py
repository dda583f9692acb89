"""f32 and bf16 Transpose of static shape by a constant order, as a oneDNN reorder (:class:`._dnnl_ops.Reorder`).

A transposition is a copy from the input seen through permuted strides into a C-contiguous output: oneDNN's
jit reorder does it several times faster than NumPy's strided copy on image-sized tensors (an NCHW image to
NHWC: 29 us against 183 us, 1 thread), takes a channels-last input as it is (a convolution's output going to an
NHWC model output is one pass) and, being one primitive, stays inside a native segment. A primitive is made
per input layout a call brings (at most :data:`LAYOUTS`); others, and every other Transpose, run NumPy's copy.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import LAYOUT_TYPES, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Reorder
from vinerun.plugins.cpu.kernels._native import (
    OutputLayout,
    ValueLayout,
    dense_value,
    element_layout,
    single_primitive_kernel,
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
    if lib is None or dt is None or order is None or not xs.is_static or not ys.is_static:
        return None
    shape = tuple(int(d) for d in xs.to_shape())
    out = tuple(int(d) for d in ys.to_shape())
    rank = len(shape)
    perm = [int(a) % rank for a in np.asarray(order).reshape(-1)] if np.asarray(order).size else \
        list(reversed(range(rank)))
    if not shape or 0 in shape or sorted(perm) != list(range(rank)):
        return None
    out_value = dense_value(out, dtype)

    def transposition(x: ValueLayout) -> Reorder:
        """A copy of the input seen through the permuted strides into a C-contiguous output."""
        strides = element_layout(x)[1]
        return Reorder(lib, (out, tuple(strides[a] for a in perm), dt), element_layout(out_value))

    return single_primitive_kernel(node, shape, OutputLayout(out_value, False), transposition,
                                   lambda inputs: [np.ascontiguousarray(np.transpose(inputs[0], perm))],
                                   "onednn_transpose", LAYOUTS)
