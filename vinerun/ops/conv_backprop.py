"""ConvolutionBackpropData and GroupConvolutionBackpropData (opset1): transposed convolutions.

Data ``[N, C_in, *S]``; filters ``[C_in, C_out, *K]`` (grouped: ``[G, C_in / G, C_out / G, *K]``);
optional input 2 ``output_shape`` holds the spatial output size, from which the pads are deduced
(an odd total crops one more at the begin for ``same_upper``, at the end otherwise, as OpenVINO does).
Without it, each output axis is ``s * (in - 1) + d * (k - 1) + 1 - pads_begin - pads_end + output_padding``,
with no pads for ``same_*`` and ``valid``.
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._spatial import accumulation_dtype, check_auto_pad, effective_kernel, pad_or_crop, per_axis_attrs


class BackpropBase(Node):
    """Attributes, output shape and pads shared by the transposed convolutions."""

    num_inputs = (2, 3)
    strides = Attr("ints", [])
    pads_begin = Attr("ints", [])
    pads_end = Attr("ints", [])
    dilations = Attr("ints", [])
    auto_pad = Attr("str", "explicit")
    output_padding = Attr("ints", [])
    grouped = False

    def filter_dims(self) -> tuple[int, Dimension, list[int | None]] | None:
        """(groups, C_out, kernel) from the filters' shape; None when its rank is dynamic."""
        filt = self.get_input_partial_shape(1)
        if filt.rank.is_dynamic:
            return None
        dims = list(filt)
        if self.grouped:
            g, _, co, *k = dims
            groups = g.get_length() if g.is_static else 0
            c_out = g * co if g.is_static and co.is_static else Dimension()
        else:
            groups, (_, c_out, *k) = 1, dims
        return groups, c_out, [d.get_length() if d.is_static else None for d in k]

    def attrs_for(self, n: int) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        strides, dilations, pb, pe, op = per_axis_attrs(self, n, "strides", "dilations", "pads_begin", "pads_end",
                                                        "output_padding")
        return strides, dilations, pb, pe, op

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        data = self.get_input_partial_shape(0)
        mode = check_auto_pad(self.auto_pad)
        fd = self.filter_dims()
        if fd is None or data.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        groups, c_out, kernel = fd
        dims = list(data)
        n = len(dims) - 2
        if len(kernel) != n:
            raise ValidationError(f"filters {self.get_input_partial_shape(1)} do not match data {data}")
        strides, dilations, pb, pe, op = self.attrs_for(n)
        if self.has_input(2):
            value = self.const_input(2)
            if value is not None:
                spatial: list[Dimension | int] = [int(v) for v in value.reshape(-1)]
            else:
                spatial = [Dimension()] * n
            if len(spatial) != n:
                raise ValidationError(f"output_shape has {len(spatial)} values for {n} spatial axes")
            return [(et, PartialShape([dims[0], c_out, *spatial]))]
        out: list[Dimension | int] = [dims[0], c_out]
        for i, d in enumerate(dims[2:]):
            if d.is_dynamic or kernel[i] is None:
                out.append(Dimension())
            else:
                b, e = (pb[i], pe[i]) if mode == "explicit" else (0, 0)
                out.append(strides[i] * (d.get_length() - 1) + dilations[i] * (kernel[i] - 1) + 1 - b - e + op[i])
        return [(et, PartialShape(out))]

    def resolve(self, sizes: list[int], kernel: list[int], out_shape: np.ndarray | None
                ) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        """(strides, dilations, pads_begin, pads_end, output_padding) for these static sizes."""
        n = len(sizes)
        strides, dilations, pb, pe, op = self.attrs_for(n)
        mode = check_auto_pad(self.auto_pad)
        eff = effective_kernel(kernel, dilations)
        if out_shape is None:
            return (strides, dilations, pb, pe, op) if mode == "explicit" else (strides, dilations, [0] * n,
                                                                                  [0] * n, op)
        wanted = [int(v) for v in out_shape.reshape(-1)]
        pb, pe = [], []
        for i in range(n):
            total = strides[i] * (sizes[i] - 1) + eff[i] + op[i] - wanted[i]
            small = total // 2
            begin = total - small if mode == "same_upper" else small
            pb.append(begin)
            pe.append(total - begin)
        return strides, dilations, pb, pe, op


def convolve_transposed(x: np.ndarray, w: np.ndarray, groups: int, strides: list[int], dilations: list[int],
                        pads_begin: list[int], pads_end: list[int], output_padding: list[int]) -> np.ndarray:
    """Reference transposed convolution; ``w`` is ``[C_in, C_out / groups, *K]``."""
    acc = accumulation_dtype(x.dtype)
    batch, c_in, *sizes = x.shape
    kernel = list(w.shape[2:])
    c_out_g = w.shape[1]
    full = [st * (s - 1) + d * (k - 1) + 1 + op
            for s, k, st, d, op in zip(sizes, kernel, strides, dilations, output_padding, strict=False)]
    out = np.zeros((batch, groups, c_out_g, *full), dtype=acc)
    xg = x.astype(acc).reshape(batch, groups, c_in // groups, *sizes)
    wg = w.astype(acc).reshape(groups, c_in // groups, c_out_g, *kernel)
    for kidx in np.ndindex(*kernel):
        part = np.einsum("ngc...,gcf->ngf...", xg, wg[(Ellipsis, *kidx)])
        dst = tuple(slice(k * d, k * d + (s - 1) * st + 1, st)
                    for k, d, s, st in zip(kidx, dilations, sizes, strides, strict=True))
        out[(slice(None), slice(None), slice(None), *dst)] += part
    out = out.reshape(batch, groups * c_out_g, *full)
    return pad_or_crop(out, [-p for p in pads_begin], [-p for p in pads_end]).astype(x.dtype)


@register_op
class ConvolutionBackpropData(BackpropBase):
    """Transposed convolution; filters ``[C_in, C_out, *K]``."""

    type_name, version = "ConvolutionBackpropData", "opset1"

    def evaluate(self, inputs: list) -> list:
        x, w = inputs[0], inputs[1]
        out_shape = inputs[2] if len(inputs) > 2 else None
        strides, dilations, pb, pe, op = self.resolve(list(x.shape[2:]), list(w.shape[2:]), out_shape)
        return [convolve_transposed(x, w, 1, strides, dilations, pb, pe, op)]


@register_op
class GroupConvolutionBackpropData(BackpropBase):
    """Grouped transposed convolution; filters ``[G, C_in / G, C_out / G, *K]``."""

    type_name, version = "GroupConvolutionBackpropData", "opset1"
    grouped = True

    def evaluate(self, inputs: list) -> list:
        x, w = inputs[0], inputs[1]
        out_shape = inputs[2] if len(inputs) > 2 else None
        g = w.shape[0]
        w2 = w.reshape(g * w.shape[1], *w.shape[2:])
        strides, dilations, pb, pe, op = self.resolve(list(x.shape[2:]), list(w2.shape[2:]), out_shape)
        return [convolve_transposed(x, w2, g, strides, dilations, pb, pe, op)]
