"""DeformableConvolution (opset8): 2-D convolution sampling the input at learned offsets.

Inputs: data ``[N, C_in, H, W]``, offsets ``[N, deformable_group * KH * KW * 2, OH, OW]`` (a ``(dy, dx)``
pair per kernel position), filters ``[C_out, C_in / group, KH, KW]``, optional mask
``[N, deformable_group * KH * KW, OH, OW]`` multiplying each sample. Samples are bilinear; with
``bilinear_interpolation_pad`` neighbours outside the input count as zeros (a sample within one pixel
of the border still gets a share), otherwise a sample outside ``[0, size)`` is zero and neighbours
past the last row/column repeat it (as OpenVINO's CPU plugin computes).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ops._spatial import accumulation_dtype, output_size, windowed_shape
from vinerun.ops.convolution import ConvolutionBase


def bilinear_sample(img: np.ndarray, py: np.ndarray, px: np.ndarray, pad: bool) -> np.ndarray:
    """Sample ``img [N, C, H, W]`` at ``(py, px)`` (each ``[N, OH, OW]``); returns ``[N, C, OH, OW]``."""
    batch, _, h, w = img.shape
    nidx = np.arange(batch)[:, None, None]
    y0, x0 = np.floor(py), np.floor(px)
    ly, lx = py - y0, px - x0
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    out = np.zeros(img.shape[:2] + py.shape[1:], dtype=img.dtype)
    for dy, wy in ((0, 1 - ly), (1, ly)):
        for dx, wx in ((0, 1 - lx), (1, lx)):
            yy, xx = y0 + dy, x0 + dx
            vals = img[nidx, :, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]  # [N, OH, OW, C]
            weight = wy * wx
            if pad:
                weight = weight * ((yy >= 0) & (yy < h) & (xx >= 0) & (xx < w))
            weight = weight.astype(img.dtype)
            out += np.moveaxis(vals * weight[..., None], -1, 1)
    if not pad:
        inside = (py >= 0) & (py < h) & (px >= 0) & (px < w)
        out *= inside[:, None].astype(img.dtype)
    return out


@register_op
class DeformableConvolution(ConvolutionBase):
    """Deformable 2-D convolution with optional modulation mask."""

    type_name, version, num_inputs = "DeformableConvolution", "opset8", (3, 4)
    group = Attr("int", 1)
    deformable_group = Attr("int", 1)
    bilinear_interpolation_pad = Attr("bool", False)

    def groups_of_filters(self) -> tuple[int | None, list]:
        filt = self.get_input_partial_shape(2)
        if filt.rank.is_dynamic:
            return self.group, [None] * 4
        return self.group, list(filt)

    def infer(self) -> list:
        et = self.get_input_element_type(0)
        data, filt = self.get_input_partial_shape(0), self.get_input_partial_shape(2)
        if data.rank.is_dynamic or filt.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        if data.rank.get_length() != 4 or filt.rank.get_length() != 4:
            raise ValidationError(f"DeformableConvolution is 2-D: data {data} and filters {filt} must have rank 4")
        if self.group < 1 or self.deformable_group < 1:
            raise ValidationError("group and deformable_group must be positive")
        kernel = [d.get_length() if d.is_static else None for d in list(filt)[2:]]
        if None in kernel:
            return [(et, PartialShape([data[0], filt[0], -1, -1]))]
        strides, dilations, pb, pe = self.spatial_attrs(2)
        return [(et, windowed_shape(data, filt[0], kernel, strides, dilations, pb, pe, self.auto_pad))]

    def evaluate(self, inputs: list) -> list:
        x, offsets, w = inputs[:3]
        mask = inputs[3] if len(inputs) > 3 else None
        acc = accumulation_dtype(x.dtype)
        batch, chans, h, wd = x.shape
        c_out, _, kh, kw = w.shape
        strides, dilations, _, _ = self.spatial_attrs(2)
        pb, pe = self.explicit_pads([h, wd], [kh, kw])
        oh = output_size(h, dilations[0] * (kh - 1) + 1, strides[0], pb[0], pe[0])
        ow = output_size(wd, dilations[1] * (kw - 1) + 1, strides[1], pb[1], pe[1])
        dg, g = self.deformable_group, self.group
        off = offsets.astype(acc).reshape(batch, dg, kh * kw, 2, oh, ow)
        msk = None if mask is None else mask.astype(acc).reshape(batch, dg, kh * kw, oh, ow)
        base_y = (np.arange(oh) * strides[0] - pb[0])[:, None]
        base_x = (np.arange(ow) * strides[1] - pb[1])[None, :]
        xa = x.astype(acc)
        cols = np.zeros((batch, chans, kh * kw, oh, ow), dtype=acc)
        per = chans // dg
        for gi in range(dg):
            img = xa[:, gi * per:(gi + 1) * per]
            for k in range(kh * kw):
                i, j = divmod(k, kw)
                py = base_y + i * dilations[0] + off[:, gi, k, 0]
                px = base_x + j * dilations[1] + off[:, gi, k, 1]
                val = bilinear_sample(img, py, px, self.bilinear_interpolation_pad)
                if msk is not None:
                    val = val * msk[:, gi, k][:, None]
                cols[:, gi * per:(gi + 1) * per, k] = val
        cols = cols.reshape(batch, g, chans // g, kh * kw, oh, ow)
        wg = w.astype(acc).reshape(g, c_out // g, chans // g, kh * kw)
        out = np.einsum("ngckyx,gock->ngoyx", cols, wg, optimize=True)
        return [out.reshape(batch, c_out, oh, ow).astype(x.dtype)]
