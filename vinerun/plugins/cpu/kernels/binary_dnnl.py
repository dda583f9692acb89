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

import threading

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, library, optimized_impl
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD, BINARY_MUL, BINARY_SUB, Binary
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    ValueLayout,
    channels_last_value,
    dense_value,
)

ALGORITHMS = {"Add": BINARY_ADD, "Subtract": BINARY_SUB, "Multiply": BINARY_MUL}
COMMUTATIVE = ("Add", "Multiply")
#: input layout combinations a node makes primitives for
LAYOUTS = 4
#: below this many output elements a call from Python keeps the given kernel
SMALL = 4096


def dnnl_binary_kernel(node: Node, fallback: Kernel) -> Kernel:
    """``fallback`` with a oneDNN path (and a native form) where the node is an f32/bf16 Add, Subtract or
    Multiply of static shapes whose broadcast oneDNN can express."""
    lib = library()
    dtype = np.dtype(node.get_output_element_type(0).to_dtype())
    dt = DATA_TYPES.get(dtype.name)
    shapes = [node.get_input_partial_shape(i) for i in range(2)]
    out_shape = node.get_output_partial_shape(0)
    if (lib is None or dt is None or node.type_name not in ALGORITHMS or not out_shape.is_static()
            or not all(s.is_static() for s in shapes)
            or any(np.dtype(node.get_input_element_type(i).to_dtype()) != dtype for i in range(2))):
        return fallback
    out = tuple(int(d) for d in out_shape.to_shape())
    a, b = (tuple(int(d) for d in s.to_shape()) for s in shapes)
    if not out or 0 in out or len(a) > len(out) or len(b) > len(out):
        return fallback
    a, b = (1,) * (len(out) - len(a)) + a, (1,) * (len(out) - len(b)) + b  # numpy broadcast: leading ones
    swap = a != out and b == out and node.type_name in COMMUTATIVE
    full, other = (b, a) if swap else (a, b)
    if full != out:
        return fallback  # both operands broadcast, or the first of a non-commutative op
    cl_out = len(out) == 4 and keeps_channels_last(node)
    out_value = channels_last_value(out, dtype) if cl_out else dense_value(out, dtype)
    alloc = (out[0], out[2], out[3], out[1]) if cl_out else out
    algorithm, size = ALGORITHMS[node.type_name], int(np.prod(out))
    primitives: dict[tuple, Binary | None] = {}
    lock = threading.Lock()

    def layout(value: ValueLayout, dims: tuple[int, ...]) -> tuple:
        """A layout in elements with ``dims`` (the operand's rank padded with leading ones)."""
        pad = len(dims) - len(value[0])
        return dims, (0,) * pad + tuple(s // dtype.itemsize for s in value[1]), dt

    def primitive(full_value: ValueLayout, other_value: ValueLayout) -> Binary | None:
        key = (full_value, other_value)
        with lock:
            if key not in primitives and len(primitives) < LAYOUTS:
                op = Binary(lib, layout(full_value, full), layout(other_value, other),
                            layout(out_value, out), algorithm)
                primitives[key] = op if optimized_impl(op, torch.get_num_threads()) else None
            return primitives.get(key)

    def run(inputs: list) -> list:
        x, y = (inputs[1], inputs[0]) if swap else (inputs[0], inputs[1])
        usable = (size > SMALL and type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == dtype
                  and y.dtype == dtype and min(x.strides, default=0) >= 0 and min(y.strides, default=0) >= 0)
        op = primitive((x.shape, x.strides, dtype), (y.shape, y.strides, dtype)) if usable else None
        if op is None:  # NumPy keeps channels-last operands' order: only channels-last readers may get that
            res = fallback.fn(inputs)
            return res if cl_out else [np.ascontiguousarray(res[0])]
        z = np.empty(alloc, dtype)
        op(torch.get_num_threads(), x.ctypes.data, z.ctypes.data, y.ctypes.data)
        return [z.transpose(0, 3, 1, 2) if cl_out else z]

    shape_a, shape_b = (tuple(int(d) for d in s.to_shape()) for s in shapes)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        given = [layouts[1], layouts[0]] if swap else [layouts[0], layouts[1]]
        shapes_ = [shape_b, shape_a] if swap else [shape_a, shape_b]
        # a value made outside the segment: channels-last where it is a full 4-D operand of a channels-last op
        chosen = [lay if lay is not None else
                  (channels_last_value(s, dtype) if cl_out and s == out else dense_value(s, dtype))
                  for lay, s in zip(given, shapes_, strict=True)]
        if any(lay[2] != dtype or min(lay[1], default=0) < 0 for lay in chosen):
            return None
        op = primitive(chosen[0], chosen[1])
        if op is None:
            return None
        first, second = (1, 0) if swap else (0, 1)
        buffers = [Buffer(False, first, chosen[0]), Buffer(True, 0, out_value), Buffer(False, second, chosen[1])]
        return NativeStep(op, lambda threads: threads, buffers)

    # small ones run the given kernel from Python (profiling says so), oneDNN only inside segments
    kernel = Kernel(run, "onednn_" + node.type_name.lower() if size > SMALL else fallback.exec_type)
    kernel.native = native
    return kernel
