"""2-D f32 and bf16 convolutions through the direct oneDNN binding (:mod:`._dnnl`): primitive made once, a call
only executes it on the input and a fresh channels-last output.

Post-ops run inside the primitive: bias, the activation before the residual sum, the sum (the residual is
copied into the output first, oneDNN accumulates into it), the activation after. Activations oneDNN has no
exact match for, or a missing binding, leave the node to the PyTorch path of :mod:`.fused_conv`.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import (
    DATA_TYPES,
    ELTWISE,
    Conv2d,
    DepthwisePostOp,
    data_address,
    library,
    optimized_impl,
)
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeFactory,
    NativeStep,
    ValueLayout,
    channels_last_value,
    dense_copy,
    dense_value,
)
from vinerun.plugins.cpu.kernels._torch import strided_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv_winograd import WinogradConv2d, epilogue
from vinerun.plugins.cpu.thread_governor import omp_threads


def eltwise(node: Node, beta: np.ndarray | None) -> tuple[str, int, float, float] | None:
    """The oneDNN eltwise post-op (kind, algorithm, alpha, beta) for an activation node, if it has one."""
    t = node.type_name
    if t == "Relu":
        return ("eltwise", ELTWISE["relu"], 0.0, 0.0)
    if t == "Clamp":
        return ("eltwise", ELTWISE["clip"], float(node.min), float(node.max))  # type: ignore[attr-defined]
    if t == "Sigmoid":
        return ("eltwise", ELTWISE["logistic"], 0.0, 0.0)
    if t == "Tanh":
        return ("eltwise", ELTWISE["tanh"], 0.0, 0.0)
    if t == "HSwish":
        return ("eltwise", ELTWISE["hardswish"], 1.0 / 6.0, 0.5)
    if t == "Swish":
        return ("eltwise", ELTWISE["swish"], 1.0 if beta is None else float(np.asarray(beta).reshape(())), 0.0)
    if t == "Elu":
        return ("eltwise", ELTWISE["elu"], float(node.alpha), 0.0)  # type: ignore[attr-defined]
    if t == "Gelu":
        tanh = node.approximation_mode.upper() == "TANH"  # type: ignore[attr-defined]
        return ("eltwise", ELTWISE["gelu_tanh" if tanh else "gelu_erf"], 0.0, 0.0)
    if t == "Mish":
        return ("eltwise", ELTWISE["mish"], 0.0, 0.0)
    return None


def conv_post_ops(parts: Any) -> list[tuple] | None:
    """The fused node's activations and sum as oneDNN post-ops, in order; None if an activation has none."""
    post_ops: list[tuple] = []
    for act in (parts.pre, "sum" if parts.sum_index is not None else None, parts.post):
        if act is None:
            continue
        if act == "sum":
            post_ops.append(("sum",))
            continue
        op = eltwise(act, parts.beta.get(id(act)))
        if op is None:
            return None
        post_ops.append(op)
    if getattr(parts, "has_linear", False):
        linear = parts.linear()
        if linear is None:
            return None  # operands that are not constants: the PyTorch path reads them per call
        post_ops.append(("eltwise", ELTWISE["linear"], *linear))
    return post_ops


def conv_bias(node: Any, parts: Any, out_c: int) -> np.ndarray | None:
    """The fused node's constant bias, one value per output channel (None without one)."""
    if parts.bias_index is None:
        return None
    return np.broadcast_to(node.const_input(parts.bias_index).reshape(-1), (out_c,))


def dnnl_conv_kernel(node: Any, parts: Any, w: np.ndarray, groups: int, size: list[int], pads_begin: list[int],
                     pads_end: list[int], strides: list[int], dilations: list[int],
                     depthwise: DepthwisePostOp | None = None, primitive: type[Conv2d] = Conv2d,
                     out_shape: tuple[int, ...] | None = None) -> Kernel | None:
    """The direct-oneDNN kernel for a 2-D f32 or bf16 (Fused)Convolution (the data type of input 0), or None
    (no binding, an unmapped post-op). Pads may differ at the two ends (oneDNN takes both: a folded
    TensorFlow-style Pad). ``depthwise``: a depthwise convolution fused after it (the node's output is then that
    convolution's). ``primitive``: :class:`._dnnl.Deconv2d` for a transposed convolution (``w`` then ``[O, C, k...]``,
    see :mod:`.deconv_dnnl`). ``out_shape``: the output's for an input of shape ``size`` where the node's shapes
    are dynamic (one kernel per shape a call brings: :func:`dynamic_dnnl_conv_kernel`)."""
    lib = library()
    out = node.get_output_partial_shape(0)
    dt = node.get_input_element_type(0).to_dtype()
    if lib is None or (out_shape is None and not out.is_static) or dt.name not in DATA_TYPES:
        return None
    post_ops = conv_post_ops(parts)
    if post_ops is None:
        return None
    bias = conv_bias(node, parts, w.shape[0])
    dynamic = out_shape is not None
    if out_shape is None:
        out_shape = tuple(int(d) for d in out.to_shape())
    winograd = getattr(node, "algorithm", "direct") == "winograd" and epilogue(post_ops) is not None
    if winograd:  # see winograd_selection: f32, 3x3, stride 1, where it pays
        conv: Conv2d | WinogradConv2d = WinogradConv2d(lib, w, bias, tuple(size), post_ops)
    else:
        conv = primitive(lib, w, bias, groups, tuple(size), out_shape, strides, dilations, pads_begin, pads_end,
                         post_ops, DATA_TYPES[dt.name], depthwise=depthwise)
    current = torch.get_num_threads()
    if dt.name == "float32":
        impl: str | None = conv.impl_name((current, True))  # made now: errors show at compile time
    else:
        impl = optimized_impl(conv, (current, True))  # bf16 without a fast primitive: the PyTorch path
        if impl is None:
            return None
    keep_cl = keeps_channels_last(node)
    # a model input arrives NCHW (also through the precision pass's Convert): a primitive for that layout saves
    # a copy (when oneDNN has a fast one)
    nchw_ok = _model_input(node.input_value(0).node) and conv.takes_nchw(current)
    if current > 1 and not dynamic:
        prepare_one_thread(lambda: (conv.instance((1, True)), nchw_ok and conv.takes_nchw(1)))
    n, o, oh, ow = out_shape
    s_index = parts.sum_index
    threads = torch.get_num_threads
    c, h, wd = size[1:]
    b = dt.itemsize
    cl_strides = (h * wd * c * b, b, wd * c * b, c * b)
    out_strides = (oh * ow * o * b, ow * o * b, o * b, b)  # of the NHWC view of a channels-last output
    inplace = False

    def enable_inplace() -> None:
        nonlocal inplace
        inplace = True

    def run(inputs: list) -> list:
        x = inputs[0]
        if x.dtype != dt:
            x = x.astype(dt)
        cl = x.strides == cl_strides
        if not cl and not (nchw_ok and x.flags.c_contiguous):
            # to channels-last with ATen's copy, which runs on the intra-op threads (NumPy's on one)
            x = strided_numpy(to_torch(x).contiguous(memory_format=torch.channels_last))
            cl = True
        if s_index is None:
            y = np.empty((n, oh, ow, o), dt)
        else:
            residual = inputs[s_index].transpose(0, 2, 3, 1)
            if inplace and residual.strides == out_strides and residual.dtype == dt and residual.flags.writeable:
                y = residual  # the plan says no one reads it after this node: accumulate into it
            else:
                y = np.empty((n, oh, ow, o), dt)
                np.copyto(y, residual)
        conv((threads(), cl), data_address(x), data_address(y))
        y = y.transpose(0, 3, 1, 2)
        return [y if keep_cl else dense_copy(y)]

    base = "winograd_conv2d" if winograd else "onednn_conv2d" if primitive is Conv2d else "onednn_deconv2d"
    exec_type = base + ("_sum" if s_index is not None else "_dw" if depthwise is not None else "")
    kernel = Kernel(run, exec_type)
    if keep_cl and not dynamic:
        kernel.native = _native_form(conv, tuple(size), out_shape, dt, nchw_ok, s_index)
    if s_index is not None:  # the plan may let the sum accumulate into the residual (see Plan._plan_in_place)
        kernel.inplace_input = s_index  # type: ignore[attr-defined]
        kernel.enable_inplace = enable_inplace  # type: ignore[attr-defined]
    kernel.impl = impl  # the oneDNN implementation, e.g. "brgconv_1x1:avx2"
    return kernel


#: per-shape kernels a dynamic convolution keeps at least and at most (the least recently used goes first)
SHAPES, MOST_SHAPES = 16, 256
#: each per-shape kernel holds its own prepacked filters: the shapes kept are capped at this many bytes of them
FILTER_BYTES = 16 << 20


def dynamic_dnnl_conv_kernel(node: Any, parts: Any, w: np.ndarray, groups: int, strides: list[int],
                             dilations: list[int], fallback: Kernel) -> Kernel | None:
    """A 2-D convolution whose input's batch or spatial sizes are dynamic (an OCR model's any-size image): a shape
    that comes back gets its own :func:`dnnl_conv_kernel` (made at its second call, then kept), so the post-ops
    run inside the primitive in f32 as for a static shape (``fallback``, the ATen path, rounds to bf16 before each
    of them and reorders the filters every call: PP-OCR's recogniser at widths that recur, 1.5-2.5x faster). A
    shape's first call, and a shape oneDNN has no fast primitive for, run ``fallback``: making the primitives costs
    more than one call (the recogniser's 38 convolutions: ~25 ms). None where the channels are dynamic or the data
    type has no oneDNN form."""
    xs = node.get_input_partial_shape(0)
    dt = node.get_input_element_type(0).to_dtype()
    if library() is None or xs.rank.is_dynamic or xs.rank.get_length() != 4 or not xs[1].is_static or \
            dt.name not in DATA_TYPES or conv_post_ops(parts) is None:
        return None
    kernels: OrderedDict[tuple[int, ...], Kernel | None] = OrderedDict()
    seen: set[tuple[int, ...]] = set()
    kernel_shape = list(w.shape[2:])
    # 20 recurring widths against a cap of 16 that started over made every call build its primitives (40 ms, not 15)
    most = min(MOST_SHAPES, max(SHAPES, FILTER_BYTES // max(1, w.nbytes)))

    def kernel_for(size: tuple[int, ...]) -> Kernel | None:
        made = kernels.get(size, kernels)  # (the dict itself: not there; a stream may evict it meanwhile)
        if made is not kernels:
            with contextlib.suppress(KeyError):
                kernels.move_to_end(size)
            return made  # type: ignore[return-value]
        if size not in seen:
            if len(seen) >= 4 * most:
                seen.clear()
            seen.add(size)
            return None
        while len(kernels) >= most:
            with contextlib.suppress(KeyError):
                kernels.popitem(last=False)
        pb, pe = node.explicit_pads(list(size[2:]), kernel_shape)
        spatial = [(size[2 + i] + pb[i] + pe[i] - dilations[i] * (kernel_shape[i] - 1) - 1) // strides[i] + 1
                   for i in range(2)]
        made = None
        if min(pb + pe) >= 0 and min(spatial) > 0:
            made = dnnl_conv_kernel(node, parts, w, groups, list(size), pb, pe, strides, dilations,
                                    out_shape=(size[0], w.shape[0], *spatial))
        kernels[size] = made
        return made

    def run(inputs: list) -> list:
        made = kernel_for(tuple(inputs[0].shape))
        ran = fallback if made is None else made
        # the profile names what the call ran (in its precision: ``select_kernel`` suffixed only the wrapper's)
        wrapper.exec_type, wrapper.impl = ran.exec_type + ("" if ran.exec_type.endswith(suffix) else suffix), ran.impl
        return ran.fn(inputs)

    suffix = "_bf16" if dt.name == "bfloat16" else ""

    wrapper = Kernel(run, fallback.exec_type)
    return wrapper


def _native_form(conv: Conv2d | WinogradConv2d, size: tuple[int, ...], out_shape: tuple[int, ...], dt: np.dtype,
                 nchw_ok: bool, s_index: int | None) -> NativeFactory:
    """The convolution in a native segment: a channels-last source (or an NCHW one where a primitive takes it:
    a model input), a channels-last destination; with a residual sum, the destination is the residual's memory."""
    cl_in, nchw_in = channels_last_value(size, dt), dense_value(size, dt)
    out = channels_last_value(out_shape, dt)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        x = layouts[0]
        if x is None:
            cl = not nchw_ok  # made outside the segment: a model input comes NCHW
        elif x in (cl_in, nchw_in):
            cl = x == cl_in
            if not cl and not nchw_ok:
                return None
        else:
            return None
        return NativeStep(conv, lambda threads: (threads, cl),
                          [Buffer(False, 0, cl_in if cl else nchw_in), Buffer(True, 0, out)], accumulate=s_index)

    return native


def _model_input(node: Node) -> bool:
    """A Parameter, or a Convert of one."""
    if node.type_name == "Convert":
        node = node.input_value(0).node
    return node.type_name == "Parameter"


def prepare_one_thread(make: Callable[[], Any]) -> None:
    """Call ``make`` (which makes a layer's 1-thread primitives) with this thread at 1 OpenMP thread: the thread
    governor (:mod:`..thread_governor`) probes 1 thread under load, and a probe that first built 50 primitives
    would look slow. oneDNN sizes a primitive for the calling thread's OpenMP count."""
    with omp_threads(1):
        make()
