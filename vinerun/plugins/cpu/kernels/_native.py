"""How a kernel runs inside a native segment (:mod:`vinerun.plugins.cpu.native_segment`): one oneDNN primitive
on buffers fixed in advance, or a view that gives its input's memory another shape.

A kernel offers this with ``Kernel.native``: a function of the layouts its inputs will have (None for a value
made outside the segment) that returns a :class:`NativeStep`, or None where the kernel needs its Python path
(a layout it would have to copy, an output its Python path would lay out differently).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, LAYOUT_TYPES, Primitive, PrimitiveCache, data_address, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Layout, Reorder
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last

#: layouts of a view with gaps copied by a reorder, per node (see ``_gathered``)
VIEW_COPIES = 2
#: what a value's array looks like: its shape, byte strides and dtype
ValueLayout = tuple[tuple[int, ...], tuple[int, ...], np.dtype]


def dense_value(shape: tuple[int, ...], dtype: np.dtype) -> ValueLayout:
    """The layout of a C-contiguous array."""
    strides, step = [], np.dtype(dtype).itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(shape), tuple(reversed(strides)), np.dtype(dtype)


def channels_last_value(shape: tuple[int, ...], dtype: np.dtype) -> ValueLayout:
    """The layout of an NCHW-shaped view of an NHWC array (what the oneDNN kernels pass between them)."""
    n, c, h, w = shape
    b = np.dtype(dtype).itemsize
    return tuple(shape), (h * w * c * b, b, w * c * b, c * b), np.dtype(dtype)


def layout_of_value(a: np.ndarray) -> ValueLayout:
    return a.shape, a.strides, a.dtype


def element_layout(value: ValueLayout, dims: tuple[int, ...] | None = None) -> Layout:
    """``value`` as a oneDNN layout (strides in elements); ``dims`` adds leading dimensions of size 1."""
    shape, strides, dtype = value
    dims = tuple(shape) if dims is None else dims
    elements = tuple(s // dtype.itemsize for s in strides)
    outer = elements[0] * shape[0] if shape else 1  # a new leading dim of 1: the stride a dense array has there
    return dims, (outer,) * (len(dims) - len(shape)) + elements, LAYOUT_TYPES[dtype.name]


@dataclass(frozen=True)
class OutputLayout:
    """How a kernel hands out its output: channels-last where every reader takes that, else C-contiguous."""

    value: ValueLayout
    channels_last: bool

    def empty(self) -> np.ndarray:
        """A fresh array of this layout."""
        shape, _, dtype = self.value
        if self.channels_last:
            n, c, h, w = shape
            return np.empty((n, h, w, c), dtype).transpose(0, 3, 1, 2)
        return np.empty(shape, dtype)


def output_layout(node: Node, shape: tuple[int, ...], dtype: np.dtype) -> OutputLayout:
    """The layout ``node``'s output 0 of ``shape`` is handed out in (channels-last only for rank 4)."""
    cl = len(shape) == 4 and keeps_channels_last(node)
    return OutputLayout(channels_last_value(shape, dtype) if cl else dense_value(shape, dtype), cl)


def arriving_layout(node: Node, index: int, shape: tuple[int, ...], dtype: np.dtype) -> ValueLayout:
    """The layout input ``index`` most likely has when it is made outside a segment: channels-last where its
    producer keeps that for its readers (never a model input), else C-contiguous."""
    producer = node.input_value(index).node
    cl = len(shape) == 4 and producer.type_name != "Parameter" and keeps_channels_last(producer)
    return channels_last_value(shape, dtype) if cl else dense_value(shape, dtype)


@dataclass(frozen=True)
class Buffer:
    """One buffer of a primitive call: the node's input or output ``index`` and the layout of that value;
    the primitive reads ``offset`` bytes into it (a slice of the value)."""

    output: bool
    index: int
    layout: ValueLayout
    offset: int = 0


@dataclass
class NativeStep:
    """A kernel as one primitive call on fixed buffers.

    ``primitive`` None: a view, each output is input 0's memory with another layout, ``offsets`` bytes in
    (``buffers``: the input, then the outputs). ``buffers``: the primitive's runtime buffers in its call order.
    ``accumulate``: the input whose memory the output is (oneDNN's sum post-op adds into the destination).
    """

    primitive: Any  # a _dnnl.Primitive, or None for a view
    key: Callable[[int], Any]  # the primitive's key for a thread count
    buffers: list[Buffer]
    accumulate: int | None = None
    offsets: list[int] | None = None  # a view's outputs' byte offsets into its input (None: all 0)


NativeFactory = Callable[[list[ValueLayout | None]], NativeStep | None]


def view_step(in_layout: ValueLayout, out_shape: tuple[int, ...]) -> NativeFactory:
    """The native form of a view of a C-contiguous input as ``out_shape`` (Reshape, Squeeze, Unsqueeze)."""
    out = dense_value(out_shape, in_layout[2])

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        if layouts[0] not in (None, in_layout):
            return None
        return NativeStep(None, lambda threads: None, [Buffer(False, 0, in_layout), Buffer(True, 0, out)])

    return native


def tidy(layout: ValueLayout) -> ValueLayout:
    """``layout`` with each dimension of size 1 given the stride a C-contiguous array would have there (any
    stride is right for it): a slice that is one contiguous block then compares equal to a dense layout, and
    oneDNN takes it as dense (its fast kernels, not the reference)."""
    shape, strides, dtype = layout
    out, inner = list(strides), dtype.itemsize
    for i in reversed(range(len(shape))):
        if shape[i] == 1:
            out[i] = inner
        inner = out[i] * shape[i]
    return tuple(shape), tuple(out), dtype


def strided_view(node: Node, outputs: Callable[[ValueLayout], list[tuple[ValueLayout, int]] | None]) -> NativeFactory:
    """The native form of a view that reads its input in any strided layout (Slice, Split, Gather of one index,
    Squeeze, Unsqueeze): ``outputs(input layout)`` gives each output's layout and byte offset into the input,
    or None where the view cannot express it."""
    shape = tuple(int(d) for d in node.get_input_partial_shape(0).to_shape())
    dtype = np.dtype(node.get_input_element_type(0).to_dtype())
    copies = PrimitiveCache(lambda key: Reorder(library(), element_layout(key[0]), element_layout(key[1])),
                            VIEW_COPIES)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        x = layouts[0] or arriving_layout(node, 0, shape, dtype)
        outs = outputs(x)
        if outs is None:
            return None
        if len(outs) == 1 and memory_order(outs[0][0]) is None:
            return _gathered(x, *outs[0], copies)
        buffers = [Buffer(False, 0, x), *(Buffer(True, k, tidy(lay)) for k, (lay, _) in enumerate(outs))]
        return NativeStep(None, lambda threads: None, buffers, offsets=[off for _, off in outs])

    return native


def _gathered(x: ValueLayout, view: ValueLayout, offset: int, copies: PrimitiveCache) -> NativeStep | None:
    """A view with gaps (a channel slice of a channels-last value) as a copy into a dense array of the same
    dimension order: oneDNN's element-wise kernels have only their reference code for such views (~16-50 us on
    silero-vad's [1, 129, 4]), its reorder copies one in ~0.3 us."""
    shape, strides, dtype = view
    if min(strides, default=0) <= 0 or dtype.name not in DATA_TYPES:  # oneDNN's reorder: f32 and bf16 here
        return None
    order = tuple(sorted(range(len(shape)), key=lambda i: (-strides[i], i)))
    dense = dense_in_order(shape, order, dtype)
    op = copies.get((view, dense))
    if op is None:
        return None
    return NativeStep(op, lambda threads: threads, [Buffer(False, 0, x, offset), Buffer(True, 0, dense)])


def single_primitive_kernel(node: Node, in_shape: tuple[int, ...], out: OutputLayout,
                            make: Callable[[ValueLayout], Primitive | None], fallback: Callable[[list], list],
                            exec_type: str, limit: int, small: int = 0) -> Kernel:
    """A kernel of one input and one output running a source-to-destination primitive ``make`` builds for the
    input's layout (one per layout a call brings, at most ``limit``), else ``fallback`` (also for inputs of at
    most ``small`` elements called from Python, where the fallback costs less than a primitive call); its
    native form reads the input as it arrives."""
    dtype = out.value[2]
    primitives = PrimitiveCache(make, limit)
    direct = int(np.prod(in_shape)) > small

    def run(inputs: list) -> list:
        x = inputs[0]
        usable = direct and type(x) is np.ndarray and x.dtype == dtype and min(x.strides) >= 0
        op = primitives.get(layout_of_value(x)) if usable else None
        if op is None:
            return fallback(inputs)
        y = out.empty()
        op(torch.get_num_threads(), data_address(x), data_address(y))
        return [y]

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        x = layouts[0] or arriving_layout(node, 0, in_shape, dtype)
        if x[2] != dtype or min(x[1]) < 0:
            return None
        op = primitives.get(x)
        return None if op is None else NativeStep(op, lambda threads: threads,
                                                  [Buffer(False, 0, x), Buffer(True, 0, out.value)])

    kernel = Kernel(run, exec_type)
    kernel.native = native
    return kernel


#: op types whose kernels read a rank-3 value dense in any dimension order as it is (the convolutions, views
#: that take strides, the oneDNN element-wise kernels); Reshape is not one (its native form wants C order)
ORDER_READERS = frozenset({"FusedConvolution", "Convolution", "GroupConvolution", "Slice", "Split", "VariadicSplit",
                           "Gather", "Squeeze", "Unsqueeze", "Add", "Subtract", "Multiply", "Relu", "Sigmoid",
                           "Tanh", "Clamp", "Elu", "Gelu", "Swish", "HSwish", "HardSigmoid", "Sqrt", "Exp", "Abs",
                           "Power"})


def memory_order(layout: ValueLayout) -> tuple[int, ...] | None:
    """The dimensions of ``layout`` from outermost to innermost where it is a transposed C-contiguous array
    (dimensions of size 1 keep their place), else None (a view with gaps)."""
    tidied = tidy(layout)
    shape, strides, dtype = tidied
    order = tuple(sorted(range(len(shape)), key=lambda i: (-strides[i], i)))
    return order if tidy(dense_in_order(shape, order, dtype)) == tidied else None


def dense_in_order(shape: tuple[int, ...], order: tuple[int, ...], dtype: np.dtype) -> ValueLayout:
    """The layout of a C-contiguous array of the dimensions ``order`` of ``shape``, viewed back as ``shape``."""
    strides, step = [0] * len(shape), np.dtype(dtype).itemsize
    for i in reversed(order):
        strides[i] = step
        step *= shape[i]
    return tuple(shape), tuple(strides), np.dtype(dtype)


def order_kept(node: Node, x: ValueLayout, default: ValueLayout) -> ValueLayout:
    """The layout an element-wise ``node`` hands out reading ``x`` (of the output's shape): ``x``'s dimension
    order where ``x`` is dense in one and every reader of a rank-3 output takes any order (oneDNN's eltwise
    writes only the layout it reads; its binary only src0's), else ``default``."""
    shape = default[0]
    if len(shape) != 3 or x[0] != shape or x[2] != default[2]:
        return default
    order = memory_order(x)
    targets = node.output(0).get_target_inputs()
    if order is None or not targets or any(t.get_node().type_name not in ORDER_READERS for t in targets):
        return default
    return dense_in_order(shape, order, default[2])


def empty_of(layout: ValueLayout) -> np.ndarray:
    """A fresh array of a ``layout`` dense in some dimension order."""
    shape, _, dtype = layout
    order = memory_order(layout)
    assert order is not None
    return np.empty(tuple(shape[i] for i in order), dtype).transpose(tuple(int(i) for i in np.argsort(order)))


#: strided layouts :func:`dense_copy` keeps a reorder for (process-wide)
DENSE_COPIES = 64
_dense_copies = PrimitiveCache(lambda key: Reorder(library(), element_layout(key), element_layout(dense_value(
    key[0], key[2]))), DENSE_COPIES)


def dense_copy(a: np.ndarray) -> np.ndarray:
    """``a`` C-contiguous: itself when it is, else a copy by a oneDNN reorder (a channels-last convolution output
    for readers that want NCHW: NumPy's strided copy took 4 ms for wav2vec2's first ``[1, 512, 3199]``, the reorder
    a fraction of that), or NumPy's copy where oneDNN is absent or the layout is not one it takes."""
    if a.flags.c_contiguous:
        return a
    if type(a) is np.ndarray and a.dtype.name in LAYOUT_TYPES and a.size and min(a.strides) >= 0 and library():
        op = _dense_copies.get(layout_of_value(a))
        if op is not None:
            y = np.empty(a.shape, a.dtype)
            op(torch.get_num_threads(), data_address(a), data_address(y))
            return y
    return np.ascontiguousarray(a)
