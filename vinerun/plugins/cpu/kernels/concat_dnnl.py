"""f32 and bf16 Concat of static shape through the direct oneDNN binding (:class:`._dnnl_ops.Concat`).

oneDNN's concatenation takes its inputs with any strides, so convolution outputs joined along their channels
(Inception, DenseNet, YOLO, U-Net) arrive channels-last and leave channels-last without a transposition, and,
being one primitive, the join stays inside a native segment with the convolutions around it. A primitive is
made per combination of input layouts a call brings (the first time it comes; at most :data:`LAYOUTS`), else
the node's NumPy reference runs. Not in place: the inputs are copied into the output.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, library, optimized_impl
from vinerun.plugins.cpu.kernels._dnnl_ops import Concat
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    ValueLayout,
    channels_last_value,
    dense_value,
)

#: input layout combinations a Concat node makes primitives for
LAYOUTS = 4


@cpu_kernel("Concat")
def dnnl_concat(node: Node) -> Kernel | None:
    """The kernel for a Concat of two or more static-shape f32 or bf16 inputs, or None (the reference runs)."""
    lib = library()
    n_in = node.get_input_size()
    dtype = np.dtype(node.get_output_element_type(0).to_dtype())
    dt = DATA_TYPES.get(dtype.name)
    shapes = [node.get_input_partial_shape(i) for i in range(n_in)]
    out_shape = node.get_output_partial_shape(0)
    if (lib is None or dt is None or n_in < 2 or not out_shape.is_static() or not all(s.is_static() for s in shapes)
            or any(np.dtype(node.get_input_element_type(i).to_dtype()) != dtype for i in range(n_in))):
        return None
    in_shapes = [tuple(int(d) for d in s.to_shape()) for s in shapes]
    out = tuple(int(d) for d in out_shape.to_shape())
    if not out or 0 in out or any(0 in s for s in in_shapes):
        return None
    axis = int(node.axis) % len(out)  # type: ignore[attr-defined]
    cl_out = len(out) == 4 and keeps_channels_last(node)
    out_value = channels_last_value(out, dtype) if cl_out else dense_value(out, dtype)
    alloc = (out[0], out[2], out[3], out[1]) if cl_out else out
    primitives: dict[tuple, Concat | None] = {}
    lock = threading.Lock()

    def primitive(layouts: tuple[ValueLayout, ...]) -> Concat | None:
        with lock:
            if layouts not in primitives and len(primitives) < LAYOUTS:
                srcs = [(shape, tuple(s // dtype.itemsize for s in strides), dt) for shape, strides, _ in layouts]
                concat = Concat(lib, srcs, (out, tuple(s // dtype.itemsize for s in out_value[1]), dt), axis)
                primitives[layouts] = concat if optimized_impl(concat, torch.get_num_threads()) else None
            return primitives.get(layouts)

    reference = node.evaluate

    def run(inputs: list) -> list:
        layouts = tuple((a.shape, a.strides, a.dtype) for a in inputs)
        usable = all(a.dtype == dtype and min(a.strides) >= 0 for a in inputs)
        concat = primitive(layouts) if usable else None
        if concat is None:
            return [np.ascontiguousarray(reference(inputs)[0])]
        y = np.empty(alloc, dtype)
        first, *more = (a.ctypes.data for a in inputs)
        concat(torch.get_num_threads(), first, y.ctypes.data, *more)
        return [y.transpose(0, 3, 1, 2) if cl_out else y]

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        # a value made outside the segment: channels-last where a convolution would have made it
        guess = [channels_last_value(s, dtype) if cl_out else dense_value(s, dtype) for s in in_shapes]
        chosen = tuple(lay if lay is not None else g for lay, g in zip(layouts, guess, strict=True))
        if any(min(lay[1]) < 0 or lay[2] != dtype for lay in chosen):
            return None
        concat = primitive(chosen)
        if concat is None:
            return None
        buffers = [Buffer(False, 0, chosen[0]), Buffer(True, 0, out_value),
                   *[Buffer(False, i, chosen[i]) for i in range(1, n_in)]]
        return NativeStep(concat, lambda threads: threads, buffers)

    kernel = Kernel(run, "onednn_concat")
    kernel.native = native
    return kernel
