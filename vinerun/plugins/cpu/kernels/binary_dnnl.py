"""f32 and bf16 Add, Subtract and Multiply of static shape through the direct oneDNN binding
(:class:`._dnnl_ops.Binary`), as a step of native segments.

An element-wise op between convolutions (a squeeze-excitation block's ``x * scale``, a residual add the
convolution could not take as its sum) otherwise stops a segment and turns the channels-last convolution
output into an NCHW copy. Here the op reads channels-last inputs as they are (a primitive per combination of
input layouts, at most :data:`LAYOUTS`), broadcasts its second operand where it has dimensions of size 1 (the
operands swap for the commutative ones), and writes channels-last where every reader takes that. Small arrays
called from Python keep the given kernel (NumPy's ufunc costs less than a primitive call there).
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, PrimitiveCache, data_address, library
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD, BINARY_MUL, BINARY_SUB, Binary
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    ValueLayout,
    arriving_layout,
    element_layout,
    empty_of,
    layout_of_value,
    order_kept,
    output_layout,
)

ALGORITHMS = {"Add": BINARY_ADD, "Subtract": BINARY_SUB, "Multiply": BINARY_MUL}
COMMUTATIVE = ("Add", "Multiply")
#: input layout combinations a node makes primitives for
LAYOUTS = 4
#: below this many output elements a call from Python keeps the given kernel
SMALL = 4096


def dnnl_binary_kernel(node: Node, fallback: Kernel, kind: str | None = None, post_ops: list[tuple] | None = None,
                       exec_type: str | None = None) -> Kernel:
    """``fallback`` with a oneDNN path (and a native form) where the node is an f32/bf16 Add, Subtract or
    Multiply (``kind``, default the node's type) of inputs 0 and 1, of static shapes whose broadcast oneDNN can
    express; ``post_ops`` follow it in the same pass (a fused scale and shift's add and ReLU)."""
    kind = kind or node.type_name
    lib = library()
    dtype = np.dtype(node.get_output_element_type(0).to_dtype())
    dt = DATA_TYPES.get(dtype.name)
    shapes = [node.get_input_partial_shape(i) for i in range(2)]
    out_shape = node.get_output_partial_shape(0)
    types = [np.dtype(node.get_input_element_type(i).to_dtype()) for i in range(2)]
    # the second operand may stay f32 under a bf16 output (a fused scale and shift's per-channel scale)
    if (lib is None or dt is None or kind not in ALGORITHMS or not out_shape.is_static
            or not all(s.is_static for s in shapes) or types[0] != dtype
            or types[1] not in (dtype, np.dtype(np.float32))):
        return fallback
    out = tuple(int(d) for d in out_shape.to_shape())
    a, b = (tuple(int(d) for d in s.to_shape()) for s in shapes)
    if not out or 0 in out or len(a) > len(out) or len(b) > len(out):
        return fallback
    a, b = (1,) * (len(out) - len(a)) + a, (1,) * (len(out) - len(b)) + b  # numpy broadcast: leading ones
    swap = a != out and b == out and kind in COMMUTATIVE and types[0] == types[1]
    full, other = (b, a) if swap else (a, b)
    if full != out:
        return fallback  # both operands broadcast, or the first of a non-commutative op
    out_layout = output_layout(node, out, dtype)
    algorithm, size = ALGORITHMS[kind], int(np.prod(out))
    primitives = PrimitiveCache(lambda key: Binary(lib, element_layout(key[0], full), element_layout(key[1], other),
                                                   element_layout(key[2]), algorithm, post_ops), LAYOUTS)
    first, second = (1, 0) if swap else (0, 1)  # the inputs that are oneDNN's src0 and src1
    second_type = types[second]

    def run(inputs: list) -> list:
        x, y = inputs[first], inputs[second]
        usable = (size > SMALL and type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == dtype
                  and y.dtype == second_type and min(x.strides, default=0) >= 0 and min(y.strides, default=0) >= 0)
        z_layout = order_kept(node, layout_of_value(x), out_layout.value) if usable else out_layout.value
        op = primitives.get((layout_of_value(x), layout_of_value(y), z_layout)) if usable else None
        if op is None:  # NumPy keeps channels-last operands' order: only channels-last readers may get that
            res = fallback.fn(inputs)
            return res if out_layout.channels_last else [np.ascontiguousarray(res[0])]
        z = empty_of(z_layout)
        op(torch.get_num_threads(), data_address(x), data_address(z), data_address(y))
        return [z]

    in_shapes = [tuple(int(d) for d in s.to_shape()) for s in shapes]

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        chosen = [layouts[i] if layouts[i] is not None else arriving_layout(node, i, in_shapes[i], types[i])
                  for i in (first, second)]
        if any(lay[2] != types[i] or min(lay[1], default=0) < 0 for lay, i in zip(chosen, (first, second),
                                                                                     strict=True)):
            return None
        z = order_kept(node, chosen[0], out_layout.value)  # oneDNN's fast binary writes src0's layout
        op = primitives.get((chosen[0], chosen[1], z))
        if op is None:
            return None
        buffers = [Buffer(False, first, chosen[0]), Buffer(True, 0, z),
                   Buffer(False, second, chosen[1])]
        return NativeStep(op, lambda threads: threads, buffers)

    # small ones run the given kernel from Python (profiling says so), oneDNN only inside segments
    kernel = Kernel(run, (exec_type or "onednn_" + kind.lower()) if size > SMALL else fallback.exec_type)
    kernel.native = native
    return kernel
