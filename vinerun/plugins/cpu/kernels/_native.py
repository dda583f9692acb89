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


@dataclass(frozen=True)
class Buffer:
    """One buffer of a primitive call: the node's input or output ``index`` and the layout of that value."""

    output: bool
    index: int
    layout: ValueLayout


@dataclass
class NativeStep:
    """A kernel as one primitive call on fixed buffers.

    ``primitive`` None: a view, output 0 is input 0's memory with another layout (``buffers``: input, output).
    ``buffers``: the primitive's runtime buffers in its call order. ``accumulate``: the input whose memory the
    output is (oneDNN's sum post-op adds into the destination).
    """

    primitive: Any  # a _dnnl.Primitive, or None for a view
    key: Callable[[int], Any]  # the primitive's key for a thread count
    buffers: list[Buffer]
    accumulate: int | None = None


NativeFactory = Callable[[list[ValueLayout | None]], NativeStep | None]


def view_step(in_layout: ValueLayout, out_shape: tuple[int, ...]) -> NativeFactory:
    """The native form of a view of a C-contiguous input as ``out_shape`` (Reshape, Squeeze, Unsqueeze)."""
    out = dense_value(out_shape, in_layout[2])

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        if layouts[0] not in (None, in_layout):
            return None
        return NativeStep(None, lambda threads: None, [Buffer(False, 0, in_layout), Buffer(True, 0, out)])

    return native
