"""AdaptiveAvgPool and AdaptiveMaxPool (opset8): pool each spatial axis into a given number of bins.

Bin ``i`` of an axis of length ``L`` pooled to ``n`` bins spans ``[floor(i * L / n), ceil((i + 1) * L / n))``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._shape_helpers import check_index_type, const_ints, index_type, rank_of


def _bins(length: int, n: int) -> list[tuple[int, int]]:
    return [(i * length // n, math.ceil((i + 1) * length / n)) for i in range(n)]


class _AdaptivePool(Node):
    num_inputs = (2, 2)

    def _out_shape(self) -> PartialShape:
        ps = self.get_input_partial_shape(0)
        check_index_type(self, 1, "output_shape")
        r = rank_of(ps)
        if r is not None and r not in (3, 4, 5):
            raise ValidationError(f"data must have rank 3, 4 or 5, got {r}")
        sizes = const_ints(self, 1)
        if r is not None and sizes is not None and len(sizes) != r - 2:
            raise ValidationError(f"output_shape must have {r - 2} values (one per spatial axis), got {len(sizes)}")
        if r is None:
            return PartialShape.dynamic()
        head = list(ps)[:2]
        if sizes is None:
            return PartialShape(head + [Dimension()] * (r - 2))
        return PartialShape(head + [Dimension(s) for s in sizes])

    def _windows(self, x: np.ndarray, sizes: list[int]):
        spatial = x.shape[2:]
        for idx in itertools.product(*[range(s) for s in sizes]):
            bounds = [_bins(spatial[a], sizes[a])[i] for a, i in enumerate(idx)]
            yield idx, tuple(slice(b, e) for b, e in bounds), bounds


@register_op
class AdaptiveAvgPool(_AdaptivePool):
    """The mean of each bin: ``[N, C, D...] -> [N, C, *output_shape]``."""

    type_name, version = "AdaptiveAvgPool", "opset8"

    def infer(self) -> list:
        return [(self.get_input_element_type(0), self._out_shape())]

    def evaluate(self, inputs: list) -> list:
        x, sizes = inputs[0], [int(s) for s in np.asarray(inputs[1]).reshape(-1)]
        out = np.empty(x.shape[:2] + tuple(sizes), x.dtype)
        for idx, window, _ in self._windows(x, sizes):
            out[(..., *idx)] = x[(..., *window)].astype(np.float64).mean(axis=tuple(range(2, x.ndim)))
        return [out]


@register_op
class AdaptiveMaxPool(_AdaptivePool):
    """The maximum of each bin, and its index (flattened over the input's spatial axes)."""

    type_name, version = "AdaptiveMaxPool", "opset8"
    index_element_type = Attr("type", "i64")

    def infer(self) -> list:
        shape = self._out_shape()
        return [(self.get_input_element_type(0), shape), (index_type(self.index_element_type), shape)]

    def evaluate(self, inputs: list) -> list:
        x, sizes = inputs[0], [int(s) for s in np.asarray(inputs[1]).reshape(-1)]
        spatial = x.shape[2:]
        values = np.empty(x.shape[:2] + tuple(sizes), x.dtype)
        indices = np.empty(x.shape[:2] + tuple(sizes), index_type(self.index_element_type).to_dtype())
        for idx, window, bounds in self._windows(x, sizes):
            block = x[(..., *window)]
            flat = block.reshape(x.shape[:2] + (-1,))
            arg = flat.argmax(axis=-1)  # first maximum, as OpenVINO's
            local = np.unravel_index(arg, block.shape[2:])
            coords = [loc + b for loc, (b, _) in zip(local, bounds, strict=True)]
            values[(..., *idx)] = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
            indices[(..., *idx)] = np.ravel_multi_index(coords, spatial)
        return [values, indices]
