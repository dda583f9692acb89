"""Transpose (opset1), DepthToSpace (opset1) and SpaceToDepth (opset1): axis permutations."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops._shape_helpers import check_index_type, const_ints, rank_of


def check_permutation(order: list[int], rank: int) -> list[int]:
    """Validate ``order`` as a permutation of range(rank); an empty order means reversed axes."""
    if not order:
        return list(range(rank))[::-1]
    if sorted(order) != list(range(rank)):
        raise ValidationError(f"the order {order} is not a permutation of the {rank} axes")
    return order


@register_op
class Transpose(Node):
    """Permute axes: output axis i is input axis ``order[i]`` (empty order reverses the axes)."""

    type_name, version, num_inputs = "Transpose", "opset1", (2, 2)

    def infer(self) -> list:
        check_index_type(self, 1, "the order")
        ps = self.get_input_partial_shape(0)
        et = self.get_input_element_type(0)
        r = rank_of(ps)
        order = const_ints(self, 1)
        if r is None or order is None:
            return [(et, PartialShape.dynamic(r))]
        order = check_permutation(order, r)
        return [(et, PartialShape([ps[a] for a in order]))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        order = check_permutation([int(a) for a in np.asarray(inputs[1]).reshape(-1)], x.ndim)
        return [np.array(np.transpose(x, order), order="C")]


class _BlockRearrange(Node):
    """Shared by DepthToSpace and SpaceToDepth: ``block_size`` and ``mode``."""

    num_inputs = (1, 1)
    mode = Attr("str", "blocks_first")
    block_size = Attr("int", 1)

    def checked_input(self) -> tuple[PartialShape, Type, int | None]:
        """Check the attributes and the input's rank (>= 3); the input's shape, type and rank (None if dynamic)."""
        if self.mode not in ("blocks_first", "depth_first"):
            raise ValidationError(f"mode must be 'blocks_first' or 'depth_first', got '{self.mode}'")
        if self.block_size < 1:
            raise ValidationError(f"block_size must be positive, got {self.block_size}")
        ps, et = self.get_input_partial_shape(0), self.get_input_element_type(0)
        r = rank_of(ps)
        if r is not None and r < 3:
            raise ValidationError(f"the input must have rank >= 3, got {r}")
        return ps, et, r


@register_op
class DepthToSpace(_BlockRearrange):
    """Move blocks of channels into spatial blocks: [N, C*bs^K, D...] -> [N, C, D*bs...]."""

    type_name, version = "DepthToSpace", "opset1"

    def infer(self) -> list:
        ps, et, r = self.checked_input()
        if r is None:
            return [(et, PartialShape.dynamic())]
        k, bs = r - 2, self.block_size
        c = ps[1]
        if c.is_static:
            if c.get_length() % bs**k:
                raise ValidationError(f"channels ({c}) must be divisible by block_size^{k} = {bs**k}")
            c = Dimension(c.get_length() // bs**k)
        return [(et, PartialShape([ps[0], c] + [d * bs for d in list(ps)[2:]]))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        n, c, *sp = x.shape
        k, bs = len(sp), self.block_size
        if self.mode == "blocks_first":
            y = x.reshape([n] + [bs] * k + [c // bs**k] + sp)
            order = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
        else:
            y = x.reshape([n, c // bs**k] + [bs] * k + sp)
            order = [0, 1] + [a for i in range(k) for a in (k + 2 + i, 2 + i)]
        return [np.array(y.transpose(order), order="C").reshape([n, c // bs**k] + [d * bs for d in sp])]


@register_op
class SpaceToDepth(_BlockRearrange):
    """Move spatial blocks into channels: [N, C, D*bs...] -> [N, C*bs^K, D...]."""

    type_name, version = "SpaceToDepth", "opset1"

    def infer(self) -> list:
        ps, et, r = self.checked_input()
        if r is None:
            return [(et, PartialShape.dynamic())]
        k, bs = r - 2, self.block_size
        spatial = []
        for d in list(ps)[2:]:
            if d.is_static and d.get_length() % bs:
                raise ValidationError(f"spatial dim {d} is not divisible by block_size {bs}")
            spatial.append(Dimension(d.get_length() // bs) if d.is_static else Dimension())
        return [(et, PartialShape([ps[0], ps[1] * bs**k] + spatial))]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        n, c, *sp = x.shape
        k, bs = len(sp), self.block_size
        split = [n, c] + [v for d in sp for v in (d // bs, bs)]
        y = x.reshape(split)
        blocks = [3 + 2 * i for i in range(k)]
        outer = [2 + 2 * i for i in range(k)]
        order = [0] + (blocks + [1] if self.mode == "blocks_first" else [1] + blocks) + outer
        return [np.array(y.transpose(order), order="C").reshape([n, c * bs**k] + [d // bs for d in sp])]
