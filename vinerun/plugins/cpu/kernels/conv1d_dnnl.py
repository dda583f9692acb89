"""1-D f32 and bf16 convolutions of static shape on oneDNN: the 2-D primitive of :mod:`.conv_dnnl` (bias,
activations and residual sum as post-ops) on the ``[N, C, 1, L]`` view, with a native form on 3-D layouts.

Only oneDNN's direct implementations (``brgconv``, ``brgconv_1x1``) are taken; where it has only im2col + GEMM
(``gemm:jit``) or its reference one, :mod:`.conv1d`'s NumPy product runs instead. Measured on silero-vad's five
convolutions (2-core Zen4, a call from Python): ``gemm:jit`` 15-53 us against im2col's 9-20; the direct ones
2-2.5 us faster than im2col on the two widest, 0.3-2.7 us slower on the others, and ~0.5 us a step in a native
segment instead of ~5 (silero-vad's whole step: 140 us against 200). Two static-shape rewrites turn silero's
other shapes into direct ones:

- taps that read only padding for every output are dropped (a kernel of 3 over a signal of 1 or 2);
- a one-channel convolution whose kernel is a whole number of strides (an STFT frame: 256 taps, stride 128)
  is the stride-1 convolution of the signal read as ``[L / s, s]`` channels-last ("space to depth").

A 3-D value is C-contiguous ``[N, C, L]`` or channels-last (``[N, L, C]`` memory viewed as ``[N, C, L]``);
where ``C`` or ``L`` is 1 the two are the same memory, and the C-contiguous strides name it. The output stays
channels-last only where every reader takes any dense order (``_native.ORDER_READERS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, Conv2d, DnnlError, data_address, library
from vinerun.plugins.cpu.kernels._native import (
    ORDER_READERS,
    Buffer,
    NativeFactory,
    NativeStep,
    ValueLayout,
    dense_copy,
    dense_value,
    empty_of,
)
from vinerun.plugins.cpu.kernels.conv_dnnl import conv_bias, conv_post_ops, prepare_one_thread

#: problems of at most this many multiply-adds run their 1-thread primitive at any thread count: silero-vad's
#: (0.1-0.3 M) took 1.1-7x longer with 2 threads on 2 cores (a parallel region costs more than half the work)
SERIAL_MACS = 1 << 19


@dataclass(frozen=True)
class Geometry:
    """The 2-D problem oneDNN solves for a 1-D convolution: filters ``[O, C', 1, K']``, source and destination
    dims, and the width's stride, dilation and pads."""

    w: np.ndarray
    src: tuple[int, int, int, int]
    dst: tuple[int, int, int, int]
    stride: int
    dilation: int
    pads: tuple[int, int]
    space_to_depth: bool = False


def geometry(w: np.ndarray, groups: int, size: tuple[int, int, int], out_len: int, stride: int, dilation: int,
             pb: int, pe: int) -> Geometry:
    """The oneDNN problem for filters ``w`` ``[O, C / groups, K]`` over an input ``size`` with explicit pads,
    dead taps dropped and a one-channel strided frame read as channels (see the module docstring)."""
    n, c, length = size
    k = w.shape[2]
    live = [t for t in range(k) if _reads_signal(t, length, out_len, stride, dilation, pb)]
    if live:
        first = live[0] if live[0] * dilation <= pb else 0
        w, pb = w[:, :, first:live[-1] + 1], pb - first * dilation
        k = w.shape[2]
    pe = max(0, (out_len - 1) * stride + dilation * (k - 1) + 1 - length - pb)  # pads past the last window: none
    blocks = out_len - 1 + k // stride
    if (c == 1 and groups == 1 and stride > 1 and k % stride == 0 and pb == pe == 0
            and (n == 1 or blocks * stride == length)):
        frames = w.reshape(w.shape[0], k // stride, stride).transpose(0, 2, 1)  # [O, s, K / s]
        return Geometry(frames[:, :, None, :], (n, stride, 1, blocks), (n, w.shape[0], 1, out_len), 1, 1, (0, 0),
                        True)
    return Geometry(w[:, :, None, :], (n, c, 1, length), (n, w.shape[0], 1, out_len), stride, dilation, (pb, pe))


def _reads_signal(t: int, length: int, out_len: int, stride: int, dilation: int, pb: int) -> bool:
    """Whether tap ``t`` reads a real (not padding) element for some output position."""
    offset = t * dilation - pb  # position read for output 0
    first = max(0, -(offset // stride))  # the first output whose read is not left of the signal
    return first < out_len and first * stride + offset < length


def direct(impl: str) -> bool:
    """Whether oneDNN's implementation is a direct convolution (not im2col + GEMM, not its reference one)."""
    return not impl.startswith("ref") and "gemm" not in impl


def macs(g: Geometry, groups: int) -> int:
    """The multiply-adds of the problem oneDNN solves."""
    n, c, _, _ = g.src
    _, o, _, out_len = g.dst
    return n * o * out_len * c // groups * g.w.shape[3]


def value_layout(shape: tuple[int, int, int], dtype: np.dtype, channels_last: bool) -> ValueLayout:
    """A 3-D value's layout: C-contiguous, or channels-last (C-contiguous strides where both are one memory)."""
    n, c, length = shape
    if not channels_last or c == 1 or length == 1:
        return dense_value(shape, dtype)
    b = np.dtype(dtype).itemsize
    return tuple(shape), (length * c * b, b, c * b), np.dtype(dtype)


def keeps_nwc(node: Node) -> bool:
    """Whether output 0 of ``node`` (rank 3) is read only by kernels that take a channels-last value."""
    targets = node.output(0).get_target_inputs()
    return bool(targets) and all(t.get_node().type_name in ORDER_READERS for t in targets)


def _choose(lib: Any, g: Geometry, bias: np.ndarray | None, groups: int, post_ops: list[tuple], dt: np.dtype,
            keep: bool, threads: int) -> tuple[Conv2d, bool, bool, str] | None:
    """(primitive, channels-last source, channels-last destination, implementation): the first pair of layouts
    with a direct implementation, preferring those that need no copy (a C-contiguous source; the destination
    the readers get); None if oneDNN has none."""
    n, c, _, length = g.src
    _, o, _, out_len = g.dst
    sources = [True] if g.space_to_depth or c == 1 or length == 1 else [False, True]
    dests = [True] if o == 1 or out_len == 1 else [keep, not keep]  # one memory: oneDNN's tags want the nwc md
    for dst_cl in dests:
        conv = Conv2d(lib, g.w, bias, groups, g.src, g.dst, [1, g.stride], [1, g.dilation], [0, g.pads[0]],
                      [0, g.pads[1]], post_ops, DATA_TYPES[dt.name], plain_dst=not dst_cl)
        for src_cl in sources:
            try:
                impl = conv.impl_name((threads, src_cl))
            except DnnlError:
                continue
            if direct(impl):
                return conv, src_cl, dst_cl, impl
    return None


def dnnl_conv1d_kernel(node: Any, parts: Any, w: np.ndarray, groups: int) -> Kernel | None:
    """The oneDNN kernel for a static 1-D f32 or bf16 (Fused)Convolution (filters ``[O, C / groups, K]``), or
    None (no binding, an unmapped post-op, no direct implementation: callers take im2col or ATen)."""
    lib = library()
    xs, out = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    dt = node.get_input_element_type(0).to_dtype()
    if lib is None or not xs.is_static or not out.is_static or dt.name not in DATA_TYPES:
        return None
    post_ops = conv_post_ops(parts)
    if post_ops is None:
        return None
    size = tuple(int(d) for d in xs.to_shape())
    out_shape = tuple(int(d) for d in out.to_shape())
    strides, dilations, _, _ = node.spatial_attrs(1)
    pb, pe = node.explicit_pads([size[2]], [w.shape[2]])
    if min(pb + pe) < 0:
        return None  # a crop
    g = geometry(w, groups, size, out_shape[2], strides[0], dilations[0], pb[0], pe[0])
    keep = keeps_nwc(node)
    current = torch.get_num_threads()
    chosen = _choose(lib, g, conv_bias(node, parts, w.shape[0]), groups, post_ops, dt, keep, current)
    if chosen is None:
        return None
    conv, src_cl, dst_cl, impl = chosen
    if current > 1:
        prepare_one_thread(lambda: conv.instance((1, src_cl)))
    serial = macs(g, groups) <= SERIAL_MACS
    src, dst = value_layout(size, dt, src_cl), value_layout(out_shape, dt, dst_cl)
    copy_out = dst != dense_value(out_shape, dt) and not keep  # channels-last to readers that want C-contiguous
    kernel = Kernel(_runner(conv, src, dst, copy_out, src_cl, parts.sum_index, serial), "onednn_conv1d"
                    if parts.sum_index is None else "onednn_conv1d_sum")
    if not copy_out:  # a segment hands its values out as Python does
        kernel.native = _native_form(conv, src, dst, src_cl, parts.sum_index, serial)
    kernel.impl = impl
    return kernel


def _runner(conv: Conv2d, src: ValueLayout, dst: ValueLayout, copy_out: bool, src_cl: bool,
            s_index: int | None, serial: bool) -> Any:
    """The Python call: the input copied into the primitive's source layout where it is not in it, the residual
    into the destination, the output made C-contiguous where the readers want that."""
    dt = src[2]
    src_nwc = src[1] != dense_value(src[0], dt)[1]
    threads = (lambda: 1) if serial else torch.get_num_threads

    def laid_out(x: np.ndarray) -> bool:
        return bool((x.transpose(0, 2, 1) if src_nwc else x).flags.c_contiguous)  # NumPy ignores dims of 1

    def run(inputs: list) -> list:
        x = inputs[0]
        if x.dtype != dt:
            x = x.astype(dt)
        if not laid_out(x):
            y = empty_of(src)
            np.copyto(y, x)
            x = y
        y = empty_of(dst)
        if s_index is not None:
            np.copyto(y, inputs[s_index])
        conv((threads(), src_cl), data_address(x), data_address(y))
        return [dense_copy(y) if copy_out else y]

    return run


def _native_form(conv: Conv2d, src: ValueLayout, dst: ValueLayout, src_cl: bool, s_index: int | None,
                 serial: bool) -> NativeFactory:
    """The convolution in a native segment: the input in the primitive's source layout (one made outside the
    segment is copied into it), the output in its destination layout; with a residual sum, the destination is
    the residual's memory."""

    def key(threads: int) -> tuple[int, bool]:
        return (1 if serial else threads, src_cl)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        if layouts[0] not in (None, src):
            return None
        return NativeStep(conv, key, [Buffer(False, 0, src), Buffer(True, 0, dst)], accumulate=s_index)

    return native
