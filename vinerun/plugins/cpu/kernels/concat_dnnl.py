"""f32 and bf16 Concat of static shape through the direct oneDNN binding (:class:`._dnnl_ops.Concat`).

oneDNN's concatenation takes its inputs with any strides, so convolution outputs joined along their channels
(Inception, DenseNet, YOLO, U-Net) arrive channels-last and leave channels-last without a transposition, and,
being one primitive, the join stays inside a native segment with the convolutions around it. A primitive is
made per combination of input layouts a call brings (the first time it comes; at most :data:`LAYOUTS`), else
the node's NumPy reference runs. Not in place: the inputs are copied into the output.
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, PrimitiveCache, data_address, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Concat
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    ValueLayout,
    arriving_layout,
    element_layout,
    layout_of_value,
    output_layout,
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
    if not out_shape.is_static or not all(s.is_static for s in shapes):
        return _dynamic_concat(node)
    if (lib is None or dt is None or n_in < 2
            or any(np.dtype(node.get_input_element_type(i).to_dtype()) != dtype for i in range(n_in))):
        return None
    in_shapes = [tuple(int(d) for d in s.to_shape()) for s in shapes]
    out = tuple(int(d) for d in out_shape.to_shape())
    if not out or 0 in out or any(0 in s for s in in_shapes):
        return None
    axis = int(node.axis) % len(out)  # type: ignore[attr-defined]
    out_layout = output_layout(node, out, dtype)
    primitives = PrimitiveCache(lambda layouts: Concat(lib, [element_layout(lay) for lay in layouts],
                                                       element_layout(out_layout.value), axis), LAYOUTS)
    reference = node.evaluate

    def run(inputs: list) -> list:
        usable = all(a.dtype == dtype and min(a.strides) >= 0 for a in inputs)
        concat = primitives.get(tuple(layout_of_value(a) for a in inputs)) if usable else None
        if concat is None:
            return [np.ascontiguousarray(reference(inputs)[0])]
        y = out_layout.empty()
        first, *more = (data_address(a) for a in inputs)
        concat(torch.get_num_threads(), first, data_address(y), *more)
        return [y]

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        chosen = tuple(lay if lay is not None else arriving_layout(node, i, in_shapes[i], dtype)
                       for i, lay in enumerate(layouts))
        if any(min(lay[1]) < 0 or lay[2] != dtype for lay in chosen):
            return None
        concat = primitives.get(chosen)
        if concat is None:
            return None
        buffers = [Buffer(False, 0, chosen[0]), Buffer(True, 0, out_layout.value),
                   *[Buffer(False, i, chosen[i]) for i in range(1, n_in)]]
        return NativeStep(concat, lambda threads: threads, buffers)

    kernel = Kernel(run, "onednn_concat")
    kernel.native = native
    return kernel


def _dynamic_concat(node: Node) -> Kernel | None:
    """A Concat of dynamic shapes (a KV cache growing by a token): NumPy's, with the axis resolved once."""
    rank = node.get_output_partial_shape(0).rank
    if rank.is_dynamic or node.get_input_size() < 1:
        return None
    axis = int(node.axis) % max(rank.get_length(), 1)  # type: ignore[attr-defined]
    reference = node.evaluate

    def run(inputs: list) -> list:
        try:
            return [np.concatenate(inputs, axis=axis)]
        except ValueError:
            return reference(inputs)  # its error names the shapes

    return Kernel(run, "numpy_concat")
