"""1-D convolution by constant filters as one matrix product (im2col), for short signals.

A 1-D convolution of ``x[N, C, L]`` by ``w[O, C, K]`` is ``cols[N * L_out, C * K] @ w_t[C * K, O]``, where
``cols`` is a strided window view of the padded input copied once. On the small inputs of streaming speech
models (silero-vad: L of 1 to 4) this runs in a few microseconds where ATen's ``conv1d`` spends 40-50 us
setting up a oneDNN primitive per call. It runs in NumPy (BLAS ``sgemm``): on these sizes torch's
dispatch and the array conversions cost more than the arithmetic. The product is laid out ``[L_out, O]``
(the shape GEMMs are fast on) and returned transposed to ``[N, O, L_out]``. Ungrouped, f32, constant
filters only; inputs wider than :data:`MAX_ELEMENTS` run ATen's ``conv1d``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._torch import to_torch

Act = Callable[[torch.Tensor], torch.Tensor]
#: the widest input (channels x padded length) this path takes; longer signals go to oneDNN's conv1d
MAX_ELEMENTS = 1 << 16


def conv1d_matmul_kernel(node: Any, bias: np.ndarray | None = None, pre: Act | None = None,
                         sum_index: int | None = None, post: Act | None = None) -> Kernel | None:
    """The im2col kernel for a 1-D (Fused)Convolution, or None when the node does not fit it.

    ``bias`` is the constant bias; ``pre`` / ``post`` the in-place activations before / after the residual
    sum read from input ``sum_index``.
    """
    w = node.const_input(1)
    if (w is None or w.ndim != 3 or getattr(node, "conv_type", node.type_name) != "Convolution"
            or node.get_input_element_type(0).get_type_name() != "f32"):
        return None
    out_c, in_c, k = w.shape
    strides, dilations, pads_begin, pads_end = node.spatial_attrs(1)
    if min(pads_begin + pads_end) < 0:
        return None  # a crop: left to ATen
    stride, dilation = strides[0], dilations[0]
    w_t = np.array(w.reshape(out_c, in_c * k).T, np.float32, order="C")  # [C*K, O]
    b = None if bias is None else np.array(np.broadcast_to(bias.reshape(-1), (out_c,)), np.float32)
    same = (node.auto_pad or "explicit").lower().startswith("same")
    fixed = node.explicit_pads([1], [k]) if not same else None
    geometry: dict[tuple[int, ...], tuple[Any, ...] | None] = {}  # input shape -> what a call needs

    def shape_plan(shape: tuple[int, ...]) -> tuple[Any, ...] | None:
        """(pads, padded shape, window view size and byte strides, rows, view) for an input shape; None: ATen."""
        n, c, length = shape
        pb, pe = fixed or node.explicit_pads([length], [k])  # SAME_* pads depend on the length (never < 0)
        padded = length + pb[0] + pe[0]
        out_len = (padded - dilation * (k - 1) - 1) // stride + 1
        if c * padded > MAX_ELEMENTS or out_len <= 0:
            return None
        inner = (slice(None), slice(None), slice(pb[0], pb[0] + length)) if pb[0] or pe[0] else None
        size, item = (n, out_len, c, k), 4
        steps = (c * padded * item, stride * item, padded * item, dilation * item)
        return inner, (n, c, padded), size, steps, n * out_len, (n, out_len, out_c)

    def aten(x: np.ndarray) -> torch.Tensor:
        pb, pe = fixed or node.explicit_pads([x.shape[2]], [k])
        weight = torch.from_numpy(w_t.T.reshape(out_c, in_c, k).copy())
        return F.conv1d(F.pad(to_torch(x), (pb[0], pe[0])), weight, None if b is None else torch.from_numpy(b),
                        stride, 0, dilation)

    def run(inputs: list) -> list:
        x = inputs[0]
        g = geometry.get(x.shape, False)
        if g is False:
            g = geometry[x.shape] = shape_plan(x.shape)
        if g is None:
            y = aten(x).numpy()
        else:
            inner, padded, size, steps, rows, view = g
            if inner is not None:
                xp = np.zeros(padded, np.float32)
                xp[inner] = x
            else:
                xp = np.ascontiguousarray(x)
            cols = np.ndarray(size, np.float32, xp, 0, steps).reshape(rows, in_c * k)
            y = cols @ w_t
            if b is not None:
                y += b
            y = y.reshape(view).transpose(0, 2, 1)
        if pre is not None:
            y = _apply(pre, y)
        if sum_index is not None:
            y = y + inputs[sum_index]
        if post is not None:
            y = _apply(post, y)
        return [np.ascontiguousarray(y)]

    return Kernel(run, "im2col_conv1d")


def _apply(act: Act, y: np.ndarray) -> np.ndarray:
    """An (in-place where it can) ATen activation on a NumPy array; ReLU in NumPy."""
    if act is torch.relu_:
        return np.maximum(y, 0, out=y)
    return act(torch.from_numpy(y)).numpy()
