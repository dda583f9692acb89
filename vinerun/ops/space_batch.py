"""SpaceToBatch and BatchToSpace (opset2): move spatial blocks into the batch and back.

``block_shape`` has one value per data dimension (the first, for the batch, is 1).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._shape_helpers import check_index_type, const_ints, rank_of


class _BlockBatch(Node):
    num_inputs = (4, 4)

    def _consts(self) -> tuple[list[int] | None, list[int] | None, list[int] | None]:
        for i, what in ((1, "block_shape"), (2, "input 2"), (3, "input 3")):
            check_index_type(self, i, what)
        block, begin, end = const_ints(self, 1), const_ints(self, 2), const_ints(self, 3)
        r = rank_of(self.get_input_partial_shape(0))
        if r is not None and r < 2:
            raise ValidationError(f"data must have rank 2 or more, got {r}")
        for v, what in ((block, "block_shape"), (begin, "input 2"), (end, "input 3")):
            if v is not None and r is not None and len(v) != r:
                raise ValidationError(f"{what} must have {r} values (one per data dimension), got {len(v)}")
        if block is not None:
            if any(b < 1 for b in block):
                raise ValidationError(f"block_shape values must be at least 1, got {block}")
            if block[0] != 1:
                raise ValidationError(f"block_shape[0] (the batch) must be 1, got {block[0]}")
        if any(v is not None and any(x < 0 for x in v) for v in (begin, end)):
            raise ValidationError("paddings and crops must be non-negative")
        return block, begin, end

    def infer(self) -> list:
        block, begin, end = self._consts()
        ps, et = self.get_input_partial_shape(0), self.get_input_element_type(0)
        r = rank_of(ps)
        if block is None or begin is None or end is None or r is None:  # only the rank is known
            return [(et, PartialShape.dynamic() if r is None else PartialShape.dynamic(r))]
        return [(et, PartialShape(self._dims(ps, block, begin, end)))]

    def _dims(self, ps: PartialShape, block: list[int], begin: list[int], end: list[int]) -> list[Dimension]:
        """The output dimensions for constant block and paddings (or crops)."""
        raise NotImplementedError


@register_op
class SpaceToBatch(_BlockBatch):
    """``SpaceToBatch(data, block_shape, pads_begin, pads_end)``: pad, then move each spatial block into
    the batch: ``[N, D1, ...] -> [N * prod(block), (D1 + pads) / b1, ...]``."""

    type_name, version = "SpaceToBatch", "opset2"

    def _dims(self, ps: PartialShape, block: list[int], begin: list[int], end: list[int]) -> list[Dimension]:
        dims = []
        for i, d in enumerate(ps):
            if i == 0:
                dims.append(d * int(np.prod(block)) if d.is_static else Dimension())
                continue
            if not d.is_static:
                dims.append(Dimension())
                continue
            padded = d.get_length() + begin[i] + end[i]
            if padded % block[i]:
                raise ValidationError(f"padded dimension {i} ({padded}) is not divisible by block {block[i]}")
            dims.append(Dimension(padded // block[i]))
        return dims

    def evaluate(self, inputs: list) -> list:
        x, block, begin, end = inputs
        block = [int(b) for b in np.asarray(block).reshape(-1)]
        pads = list(zip(np.asarray(begin).reshape(-1).tolist(), np.asarray(end).reshape(-1).tolist(), strict=True))
        x = np.pad(x, pads)
        n, spatial = x.shape[0], x.shape[1:]
        k = len(spatial)
        split = [n]
        for d, b in zip(spatial, block[1:], strict=True):
            split += [d // b, b]
        y = x.reshape(split)
        order = [2 + 2 * i for i in range(k)] + [0] + [1 + 2 * i for i in range(k)]
        y = y.transpose(order)
        out = [n * int(np.prod(block[1:]))] + [d // b for d, b in zip(spatial, block[1:], strict=True)]
        return [np.ascontiguousarray(y).reshape(out)]


@register_op
class BatchToSpace(_BlockBatch):
    """``BatchToSpace(data, block_shape, crops_begin, crops_end)``: the inverse of SpaceToBatch, then crop:
    ``[N * prod(block), D1, ...] -> [N, D1 * b1 - crops, ...]``."""

    type_name, version = "BatchToSpace", "opset2"

    def _dims(self, ps: PartialShape, block: list[int], begin: list[int], end: list[int]) -> list[Dimension]:
        dims = []
        prod = int(np.prod(block))
        for i, d in enumerate(ps):
            if not d.is_static:
                dims.append(Dimension())
            elif i == 0:
                if d.get_length() % prod:
                    raise ValidationError(f"the batch ({d}) is not divisible by the product of block_shape ({prod})")
                dims.append(Dimension(d.get_length() // prod))
            else:
                size = d.get_length() * block[i] - begin[i] - end[i]
                if size < 0:
                    raise ValidationError(f"crops of dimension {i} exceed its size {d.get_length() * block[i]}")
                dims.append(Dimension(size))
        return dims

    def evaluate(self, inputs: list) -> list:
        x, block, begin, end = inputs
        block = [int(b) for b in np.asarray(block).reshape(-1)][1:]
        begin = np.asarray(begin).reshape(-1).tolist()
        end = np.asarray(end).reshape(-1).tolist()
        k = len(block)
        n = x.shape[0] // int(np.prod(block))
        spatial = x.shape[1:]
        y = x.reshape(block + [n, *spatial])
        order = [k]
        for i in range(k):
            order += [k + 1 + i, i]
        y = y.transpose(order).reshape([n] + [d * b for d, b in zip(spatial, block, strict=True)])
        index = tuple(slice(b, y.shape[i] - e) for i, (b, e) in enumerate(zip(begin, end, strict=True)))
        return [np.ascontiguousarray(y[index])]
