"""Convolution and GroupConvolution (opset1): N-D cross-correlation with strides, pads and dilations.

``Convolution``: data ``[N, C_in, *S]``, filters ``[C_out, C_in, *K]``.
``GroupConvolution``: filters ``[G, C_out / G, C_in / G, *K]``; depthwise when ``C_in / G == 1``.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._spatial import (
    accumulation_dtype,
    check_auto_pad,
    effective_kernel,
    output_size,
    pad_or_crop,
    per_axis_attrs,
    resolve_pads,
    windowed_shape,
    windows,
)


class ConvolutionBase(Node):
    """Attributes and shape inference shared by the forward convolutions."""

    num_inputs = (2, 2)
    strides = Attr("ints", [])
    pads_begin = Attr("ints", [])
    pads_end = Attr("ints", [])
    dilations = Attr("ints", [])
    auto_pad = Attr("str", "explicit")

    def groups_of_filters(self) -> tuple[int | None, list[Dimension]]:
        """(groups, [C_out, C_in per group, *K]) read from the filters' shape."""
        raise NotImplementedError

    def spatial_attrs(self, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
        strides, dilations, pb, pe = per_axis_attrs(self, n, "strides", "dilations", "pads_begin", "pads_end")
        return strides, dilations, pb, pe

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        data, filt = self.get_input_partial_shape(0), self.get_input_partial_shape(1)
        check_auto_pad(self.auto_pad)
        if data.rank.is_dynamic and filt.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        groups, fdims = self.groups_of_filters()
        rank = data.rank.get_length() if data.rank.is_static else len(fdims)
        if rank < 3:
            raise ValidationError(f"data must have rank 3 to 5 ([N, C, spatial...]), got {data}")
        if data.rank.is_dynamic:
            data = PartialShape.dynamic(rank)
        n = rank - 2
        if len(fdims) != rank:
            raise ValidationError(f"filters {filt} do not match data {data}: spatial ranks differ")
        c_in = data[1]
        if c_in.is_static and fdims[1].is_static and groups is not None:
            if c_in.get_length() != fdims[1].get_length() * groups:
                raise ValidationError(f"data has {c_in} channels but the filters {filt} expect "
                                      f"{fdims[1].get_length() * groups}")
        kernel = [d.get_length() if d.is_static else None for d in fdims[2:]]
        strides, dilations, pb, pe = self.spatial_attrs(n)
        if None in kernel:
            return [(et, PartialShape([data[0], fdims[0]] + [Dimension()] * n))]
        return [(et, windowed_shape(data, fdims[0], kernel, strides, dilations, pb, pe, self.auto_pad))]

    def explicit_pads(self, sizes: list[int], kernel: list[int]) -> tuple[list[int], list[int]]:
        strides, dilations, pb, pe = self.spatial_attrs(len(sizes))
        return resolve_pads(self.auto_pad, sizes, effective_kernel(kernel, dilations), strides, pb, pe)


def convolve(x: np.ndarray, w: np.ndarray, groups: int, strides: list[int], dilations: list[int],
             pads_begin: list[int], pads_end: list[int]) -> np.ndarray:
    """Reference grouped N-D convolution; ``w`` is ``[C_out, C_in / groups, *K]``."""
    acc = accumulation_dtype(x.dtype)
    n = x.ndim - 2
    kernel = list(w.shape[2:])
    xp = pad_or_crop(x.astype(acc), pads_begin, pads_end)
    eff = effective_kernel(kernel, dilations)
    outs = [output_size(xp.shape[2 + i], eff[i], strides[i], 0, 0) for i in range(n)]
    win = windows(xp, kernel, strides, dilations, outs)  # [N, C, *O, *K]
    batch, chans = x.shape[:2]
    win = win.reshape(batch, groups, chans // groups, *win.shape[2:])
    wg = w.astype(acc).reshape(groups, w.shape[0] // groups, w.shape[1], *kernel)
    letters = "ABCDEFGHIJ"
    o_sub, k_sub = letters[:n], letters[n:2 * n]
    out = np.einsum(f"ngc{o_sub}{k_sub},gfc{k_sub}->ngf{o_sub}", win, wg, optimize=True)
    return out.reshape(batch, w.shape[0], *outs).astype(x.dtype)


@register_op
class Convolution(ConvolutionBase):
    """2-input convolution; filters ``[C_out, C_in, *K]``."""

    type_name, version = "Convolution", "opset1"

    def groups_of_filters(self) -> tuple[int | None, list[Dimension]]:
        filt = self.get_input_partial_shape(1)
        if filt.rank.is_dynamic:
            rank = self.get_input_partial_shape(0).rank.get_length()
            return 1, [Dimension()] * rank
        return 1, list(filt)

    def evaluate(self, inputs: list) -> list:
        x, w = inputs
        pb, pe = self.explicit_pads(list(x.shape[2:]), list(w.shape[2:]))
        strides, dilations, _, _ = self.spatial_attrs(x.ndim - 2)
        return [convolve(x, w, 1, strides, dilations, pb, pe)]


@register_op
class GroupConvolution(ConvolutionBase):
    """Grouped convolution; filters ``[G, C_out / G, C_in / G, *K]``."""

    type_name, version = "GroupConvolution", "opset1"

    def groups_of_filters(self) -> tuple[int | None, list[Dimension]]:
        filt = self.get_input_partial_shape(1)
        if filt.rank.is_dynamic:
            rank = self.get_input_partial_shape(0).rank.get_length()
            return None, [Dimension()] * rank
        g, co, ci, *k = list(filt)
        groups = g.get_length() if g.is_static else None
        c_out = g * co if g.is_static and co.is_static else Dimension()
        return groups, [c_out, ci, *k]

    def evaluate(self, inputs: list) -> list:
        x, w = inputs
        g = w.shape[0]
        w2 = w.reshape(g * w.shape[1], *w.shape[2:])
        pb, pe = self.explicit_pads(list(x.shape[2:]), list(w2.shape[2:]))
        strides, dilations, _, _ = self.spatial_attrs(x.ndim - 2)
        return [convolve(x, w2, g, strides, dilations, pb, pe)]
