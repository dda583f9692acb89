"""Col2Im (opset15): sum sliding blocks (columns) back into an image; N-d spatial sizes are accepted."""

from __future__ import annotations

import math

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._shape_helpers import const_ints, rank_of


@register_op
class Col2Im(Node):
    """[N, C*prod(kernel), L] columns -> [N, C, *output_size]; overlapping blocks add up."""

    type_name, version, num_inputs = "Col2Im", "opset15", (3, 3)
    strides = Attr("ints", [1, 1])
    dilations = Attr("ints", [1, 1])
    pads_begin = Attr("ints", [0, 0])
    pads_end = Attr("ints", [0, 0])

    def _per_axis(self, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
        vals = []
        for name, default in (("strides", 1), ("dilations", 1), ("pads_begin", 0), ("pads_end", 0)):
            v = list(getattr(self, name))
            if len(v) != n:
                if v == [default] * len(v):
                    v = [default] * n
                else:
                    raise ValidationError(f"{name} {v} must have one value per spatial axis ({n})")
            vals.append(v)
        return vals[0], vals[1], vals[2], vals[3]

    def _blocks(self, size: list[int], kernel: list[int]) -> list[int]:
        strides, dil, pb, pe = self._per_axis(len(size))
        return [(s + b + e - d * (k - 1) - 1) // st + 1
                for s, k, st, d, b, e in zip(size, kernel, strides, dil, pb, pe, strict=True)]

    def infer(self) -> list:
        ps, et = self.get_input_partial_shape(0), self.get_input_element_type(0)
        size, kernel = const_ints(self, 1), const_ints(self, 2)
        r = rank_of(ps)
        if r is not None and r not in (2, 3):
            raise ValidationError(f"the input must have rank 2 or 3, got {r}")
        if size is None or r is None:
            return [(et, PartialShape.dynamic())]
        batch = [ps[0]] if r == 3 else []
        c = Dimension()
        cols = ps[r - 2]
        if kernel is not None and cols.is_static:
            if cols.get_length() % math.prod(kernel):
                raise ValidationError(f"dim {cols} is not divisible by the kernel size product {math.prod(kernel)}")
            c = Dimension(cols.get_length() // math.prod(kernel))
            blocks = math.prod(self._blocks(size, kernel))
            if ps[r - 1].is_static and ps[r - 1].get_length() != blocks:
                raise ValidationError(f"the input has {ps[r - 1]} blocks, but the sizes give {blocks}")
        return [(et, PartialShape(batch + [c] + [Dimension(s) for s in size]))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        size = [int(v) for v in np.asarray(inputs[1]).reshape(-1)]
        kernel = [int(v) for v in np.asarray(inputs[2]).reshape(-1)]
        unbatched = x.ndim == 2
        if unbatched:
            x = x[None]
        strides, dil, pb, pe = self._per_axis(len(size))
        blocks = self._blocks(size, kernel)
        n, c = x.shape[0], x.shape[1] // math.prod(kernel)
        cols = x.reshape([n, c] + kernel + blocks)
        padded = np.zeros([n, c] + [s + b + e for s, b, e in zip(size, pb, pe, strict=True)], x.dtype)
        for kidx in np.ndindex(*kernel):
            dst = tuple(slice(k * d, k * d + (nb - 1) * st + 1, st)
                        for k, d, nb, st in zip(kidx, dil, blocks, strides, strict=True))
            padded[(slice(None), slice(None), *dst)] += cols[(slice(None), slice(None), *kidx)]
        crop = tuple(slice(b, b + s) for b, s in zip(pb, size, strict=True))
        out = np.array(padded[(slice(None), slice(None), *crop)], order="C")
        return [out[0] if unbatched else out]
