"""Pad (opset1, opset12): constant, edge, reflect and symmetric padding; negative pads crop (opset12)."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._shape_helpers import check_index_type, const_ints, rank_of

PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def pad_array(x: np.ndarray, begin: list[int], end: list[int], mode: str, value: object = 0) -> np.ndarray:
    """Pad ``x`` by ``begin``/``end`` per axis; negative amounts crop that side first."""
    if len(begin) != x.ndim or len(end) != x.ndim:
        raise ValidationError(f"pads_begin {begin} and pads_end {end} must have one value per axis ({x.ndim})")
    for n, b, e in zip(x.shape, begin, end, strict=True):
        if n + min(b, 0) + min(e, 0) < 0:
            raise ValidationError(f"pads ({b}, {e}) crop more than the whole axis of size {n}")
    crop = tuple(slice(max(-b, 0), x.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(zip(begin, end, strict=True)))
    x = x[crop]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=True)]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(value, x.dtype))
    if mode in ("reflect", "symmetric"):
        limit = [d - 1 if mode == "reflect" else d for d in x.shape]
        for i, (b, e) in enumerate(widths):
            if max(b, e) > limit[i]:
                raise ValidationError(f"{mode} padding of ({b}, {e}) is too large for an axis of size {x.shape[i]}")
    if mode not in PAD_MODES:
        raise ValidationError(f"unknown pad_mode '{mode}'")
    if x.size == 0 and any(b or e for b, e in widths):
        raise ValidationError(f"{mode} padding needs a non-empty input")
    return np.pad(x, widths, mode=mode)


@register_op
class Pad(Node):
    """Pad input 0 by pads_begin (input 1) and pads_end (input 2); pad_value (input 3) for constant mode."""

    type_name, version, num_inputs = "Pad", "opset12", (3, 4)
    pad_mode = Attr("str", "constant")

    def infer(self) -> list:
        if self.pad_mode not in PAD_MODES:
            raise ValidationError(f"unknown pad_mode '{self.pad_mode}'; expected one of {PAD_MODES}")
        check_index_type(self, 1, "pads_begin")
        check_index_type(self, 2, "pads_end")
        et, ps = self.get_input_element_type(0), self.get_input_partial_shape(0)
        r = rank_of(ps)
        begin, end = const_ints(self, 1), const_ints(self, 2)
        if r is None:
            return [(et, PartialShape.dynamic())]
        if begin is None or end is None:
            return [(et, PartialShape.dynamic(r))]
        for what, pads in (("pads_begin", begin), ("pads_end", end)):
            if len(pads) != r:  # OpenVINO's words
                raise ValidationError(f"length of {what} mismatches with rank of input, expect {r}, but got "
                                      f"{len(pads)}")
        out = []
        for d, b, e in zip(ps, begin, end, strict=True):
            if d.is_dynamic:
                out.append(Dimension())
                continue
            n = d.get_length() + b + e
            # as OpenVINO: an axis cropped below zero has no known size (evaluating it fails)
            out.append(Dimension(n) if n >= 0 else Dimension())
        return [(et, PartialShape(out))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        begin = [int(v) for v in np.asarray(inputs[1]).reshape(-1)]
        end = [int(v) for v in np.asarray(inputs[2]).reshape(-1)]
        value = inputs[3] if len(inputs) > 3 and inputs[3] is not None else 0
        return [pad_array(x, begin, end, self.pad_mode, np.asarray(value).reshape(()))]


@register_op
class PadV1(Pad):
    """Pad-1: as Pad-12 (negative pads are accepted too)."""

    type_name, version = "Pad", "opset1"
