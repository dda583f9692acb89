"""The FusedConvolution kernel: oneDNN convolution with bias, activation and residual sum as post-ops.

1-D ones of static shape run oneDNN where it has a direct implementation (:mod:`.conv1d_dnnl`), else the
im2col product of :mod:`.conv1d`. 2-D ones run the direct oneDNN binding (:mod:`.conv_dnnl`), or without it
the PyTorch path (2-D, f32 or bf16, constant filters, static pads): filters reordered once at compile time by
``torch.ops.mkldnn._reorder_convolution_weight``, then ``torch.ops.mkldnn._convolution_pointwise`` with the
activation as a unary post-op and the residual as a binary "add" post-op (followed by an optional ReLU). The
output stays channels-last (an NCHW-shaped array with NHWC strides) when every reader takes that
(:mod:`._layout`), and is made NCHW-contiguous otherwise. Other cases run ATen ops with in-place activations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._layout import keeps_channels_last, strided_torch
from vinerun.plugins.cpu.kernels._torch import float_node, mkldnn_bf16, strided_numpy, to_numpy, to_torch
from vinerun.plugins.cpu.kernels.conv import spatial_count, torch_pad
from vinerun.plugins.cpu.kernels.conv1d import conv1d_matmul_kernel
from vinerun.plugins.cpu.kernels.conv1d_dnnl import dnnl_conv1d_kernel
from vinerun.plugins.cpu.kernels.conv_dnnl import dnnl_conv_kernel, dynamic_dnnl_conv_kernel

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_MKLDNN = torch.ops.mkldnn
#: element types of the prepacked path, and the torch dtype of its filters
_PREPACKED = {"f32": torch.float32, "bf16": torch.bfloat16}
Act = Callable[[torch.Tensor], torch.Tensor]


def _act_fn(node: Node, beta: np.ndarray | None) -> Act:
    """An ATen function (in place where ATen has one) for an activation node."""
    t = node.type_name
    if t == "Relu":
        return torch.relu_
    if t == "Clamp":
        lo, hi = float(node.min), float(node.max)
        return lambda y: y.clamp_(lo, hi)
    if t == "Sigmoid":
        return torch.sigmoid_
    if t == "Tanh":
        return torch.tanh_
    if t == "HSwish":
        return lambda y: F.hardswish(y, inplace=True)
    if t == "Swish":
        b = 1.0 if beta is None else float(np.asarray(beta).reshape(()))
        return lambda y: y.mul_(torch.sigmoid(y * b))
    if t == "Gelu":
        approx = "tanh" if node.approximation_mode.upper() == "TANH" else "none"
        return lambda y: F.gelu(y, approximate=approx)
    if t == "Elu":
        alpha = float(node.alpha)
        return lambda y: F.elu_(y, alpha)
    if t == "Mish":
        return F.mish
    if t == "SoftPlus":
        return F.softplus
    raise KeyError(t)


def _onednn_attr(node: Node, beta: np.ndarray | None) -> tuple[str, list[Any], str] | None:
    """The unary post-op oneDNN takes for an activation node (attr, scalars, algorithm), if it has one."""
    t = node.type_name
    simple = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "HSwish": "hardswish"}
    if t in simple:
        return simple[t], [], ""
    if t == "Clamp":
        return "hardtanh", [float(node.min), float(node.max)], ""
    if t == "Swish" and (beta is None or float(np.asarray(beta).reshape(())) == 1.0):
        return "swish", [], ""
    if t == "Gelu":
        return "gelu", [], "tanh" if node.approximation_mode.upper() == "TANH" else "none"
    return None


class _Parts:
    """The fused node's post-ops, sorted out: bias, activation before the sum, the sum, activation after."""

    def __init__(self, node: Any):
        self.bias_index: int | None = None
        self.pre: Node | None = None
        self.sum_index: int | None = None
        self.post: Node | None = None
        self.beta: dict[int, np.ndarray | None] = {}
        #: input indices of a trailing scalar scale and shift (``y * a + b``), and their values when constant
        self.scale_index: int | None = None
        self.shift_index: int | None = None
        for s in getattr(node, "steps", ()):
            if s.kind == "scale":
                self.scale_index = s.input_index
            elif s.kind == "shift":
                self.shift_index = s.input_index
            elif s.kind == "bias":
                self.bias_index = s.input_index
            elif s.kind == "sum":
                self.sum_index = s.input_index
            elif self.sum_index is None:
                self.pre = s.node
            else:
                self.post = s.node
            if s.kind == "activation" and s.input_index is not None:
                self.beta[id(s.node)] = node.const_input(s.input_index)

        self._node = node

    def act(self, which: Node | None) -> Act | None:
        return None if which is None else _act_fn(which, self.beta.get(id(which)))

    @property
    def has_linear(self) -> bool:
        return self.scale_index is not None or self.shift_index is not None

    def linear(self) -> tuple[float, float] | None:
        """(a, b) of the trailing ``y * a + b`` when its operands are constants, else None."""
        a, b = 1.0, 0.0
        for index, is_scale in ((self.scale_index, True), (self.shift_index, False)):
            if index is None:
                continue
            value = self._node.const_input(index)
            if value is None:
                return None
            if is_scale:
                a = float(np.asarray(value, np.float64).reshape(()))
            else:
                b = float(np.asarray(value, np.float64).reshape(()))
        return a, b

    def apply_linear(self, y: torch.Tensor, inputs: list) -> torch.Tensor:
        """``y * a + b`` from the call's operands (the PyTorch paths)."""
        if self.scale_index is not None:
            y = y.mul_(float(np.asarray(inputs[self.scale_index]).reshape(())))
        if self.shift_index is not None:
            y = y.add_(float(np.asarray(inputs[self.shift_index]).reshape(())))
        return y


class _PackedWeights:
    """Filters reordered for oneDNN, one copy per intra-op thread count.

    oneDNN picks the convolution implementation, and so the weight layout, for the number of threads
    that runs it; weights packed for 2 threads run several times slower on a 1-thread stream (each call
    reorders them again). Streams have their own thread counts, so the copy is chosen per call.
    """

    def __init__(self, w: torch.Tensor, *geometry: Any):
        self.w = w
        self.geometry = geometry
        self.by_threads = {torch.get_num_threads(): _MKLDNN._reorder_convolution_weight(w, *geometry)}

    def get(self) -> torch.Tensor:
        threads = torch.get_num_threads()
        packed = self.by_threads.get(threads)
        if packed is None:
            packed = self.by_threads[threads] = _MKLDNN._reorder_convolution_weight(self.w, *self.geometry)
        return packed


def _onednn_kernel(node: Any, parts: _Parts) -> Kernel | None:
    """The prepacked oneDNN path, or None when the node does not fit it."""
    et = node.get_input_element_type(0).get_type_name()
    rank = spatial_count(node)
    if rank not in (1, 2) or et not in _PREPACKED or (et == "bf16" and not mkldnn_bf16()):
        return None
    w = node.const_input(1)
    xshape = node.get_input_partial_shape(0)
    if w is None or not xshape.is_static:
        return None
    groups = 1
    if getattr(node, "conv_type", node.type_name) == "GroupConvolution":
        groups = w.shape[0]
        w = w.reshape(-1, *w.shape[2:])
    if rank == 1:
        return dnnl_conv1d_kernel(node, parts, w, groups)
    size = [int(d) for d in xshape.to_shape()]
    pb, pe = node.explicit_pads(size[2:], list(w.shape[2:]))
    if min(pb + pe) < 0:
        return None
    strides, dilations, _, _ = node.spatial_attrs(2)
    direct = dnnl_conv_kernel(node, parts, w, groups, size, pb, pe, strides, dilations)
    if direct is not None or pb != pe:  # PyTorch's prepacked convolution takes one pad per axis
        return direct
    dtype = _PREPACKED[et]
    packed = _PackedWeights(torch.from_numpy(np.array(w, np.float32)).to(dtype), pb, strides, dilations, groups,
                            size)
    bias = None
    if parts.bias_index is not None:
        b = node.const_input(parts.bias_index)
        bias = torch.from_numpy(np.array(np.broadcast_to(b.reshape(-1), (w.shape[0],)), np.float32)).to(dtype)
    geometry = (pb, strides, dilations, groups)
    pre = None if parts.pre is None else _onednn_attr(parts.pre, parts.beta.get(id(parts.pre)))
    pre_fn = parts.act(parts.pre) if pre is None else None
    post_fn = parts.act(parts.post)
    keep_cl = keeps_channels_last(node)
    s_index = parts.sum_index
    linear = parts.has_linear
    binary = s_index is not None and parts.pre is None and (parts.post is None or parts.post.type_name == "Relu")
    conv = _MKLDNN._convolution_pointwise
    cl = torch.channels_last

    def finish(y: torch.Tensor) -> list:
        return [strided_numpy(y) if keep_cl else to_numpy(y.contiguous())]

    if binary:
        unary = "relu" if parts.post is not None else None

        def run_binary(inputs: list) -> list:
            other = strided_torch(inputs[s_index]).contiguous(memory_format=cl)
            y = conv(strided_torch(inputs[0]), other, packed.get(), bias, *geometry, "add", 1.0, unary, [], "")
            return finish(parts.apply_linear(y, inputs) if linear else y)

        return Kernel(run_binary, "onednn_conv2d_sum")
    attr, scalars, algo = pre if pre is not None else ("none", [], "")

    def run(inputs: list) -> list:
        y = conv(strided_torch(inputs[0]), packed.get(), bias, *geometry, attr, scalars, algo)
        if pre_fn is not None:
            y = pre_fn(y)
        if s_index is not None:
            y = y.add_(strided_torch(inputs[s_index]))
        if post_fn is not None:
            y = post_fn(y)
        return finish(parts.apply_linear(y, inputs) if linear else y)

    return Kernel(run, "onednn_conv2d")


def _aten_kernel(node: Any, parts: _Parts) -> Kernel:
    """ATen convolution followed by in-place post-ops (any rank, float types)."""
    n = spatial_count(node)
    conv = _CONV[n]  # type: ignore[index]
    strides, dilations, _, _ = node.spatial_attrs(n)
    grouped = node.conv_type == "GroupConvolution"
    pre_fn, post_fn = parts.act(parts.pre), parts.act(parts.post)
    b_index, s_index = parts.bias_index, parts.sum_index

    def run(inputs: list) -> list:
        x, w = to_torch(inputs[0]), to_torch(inputs[1])
        groups = 1
        if grouped:
            groups = w.shape[0]
            w = w.reshape(-1, *w.shape[2:])
        bias = None
        if b_index is not None:  # a bf16 node's bias stays f32 (the precision pass): as the data's type
            bias = to_torch(inputs[b_index]).to(x.dtype).reshape(-1).expand(w.shape[0]).contiguous()
        pb, pe = node.explicit_pads(list(x.shape[2:]), list(w.shape[2:]))
        if pb == pe and min(pb) >= 0:
            padding = pb
        else:
            x, padding = F.pad(x, torch_pad(pb, pe)), [0] * n
        y = conv(x, w, bias, strides, padding, dilations, groups)
        if pre_fn is not None:
            y = pre_fn(y)
        if s_index is not None:
            y = y.add_(to_torch(inputs[s_index]))
        if post_fn is not None:
            y = post_fn(y)
        if parts.has_linear:
            y = parts.apply_linear(y, inputs)
        return [to_numpy(y.contiguous())]

    return Kernel(run, f"aten_conv{n}d_fused")


@cpu_kernel("FusedConvolution")
def fused_convolution(node: Node) -> Kernel | None:
    if spatial_count(node) not in _CONV or not float_node(node):
        return None
    parts = _Parts(node)
    return _onednn_kernel(node, parts) or _conv1d_kernel(node, parts) or _dynamic_kernel(node, parts) or \
        _aten_kernel(node, parts)


def _dynamic_kernel(node: Any, parts: _Parts) -> Kernel | None:
    """A 2-D convolution of dynamic shape with constant filters (and bias): oneDNN per shape, the ATen path for a
    shape it has no fast primitive for (:func:`.conv_dnnl.dynamic_dnnl_conv_kernel`)."""
    w = node.const_input(1)
    if spatial_count(node) != 2 or w is None or node.get_input_partial_shape(0).is_static or \
            (parts.bias_index is not None and node.const_input(parts.bias_index) is None):
        return None
    groups = 1
    if getattr(node, "conv_type", node.type_name) == "GroupConvolution":
        groups = w.shape[0]
        w = w.reshape(-1, *w.shape[2:])
    strides, dilations, _, _ = node.spatial_attrs(2)
    return dynamic_dnnl_conv_kernel(node, parts, w, groups, list(strides), list(dilations), _aten_kernel(node, parts))


def _conv1d_kernel(node: Any, parts: _Parts) -> Kernel | None:
    """The im2col matrix-product path of :mod:`.conv1d` (1-D, f32, constant filters and bias)."""
    if spatial_count(node) != 1 or parts.has_linear:  # the matrix-product path has no linear epilogue
        return None
    bias = None
    if parts.bias_index is not None:
        bias = node.const_input(parts.bias_index)
        if bias is None:
            return None
    return conv1d_matmul_kernel(node, bias, parts.act(parts.pre), parts.sum_index, parts.act(parts.post))


def prepacked_convolution(node: Node) -> Kernel | None:
    """The oneDNN path for a plain 1-D or 2-D (Group)Convolution with constant filters (no post-ops), else None."""
    return _onednn_kernel(node, _Parts(node)) if float_node(node) else None
