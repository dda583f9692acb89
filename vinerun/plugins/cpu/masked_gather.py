"""MaskedGatherFusion: boolean-mask indexing as PyTorch exports it becomes one :class:`~.fused_ops.MaskedGather`.

``x[mask]`` (``scores[scores > t]``, ``boxes[keep]`` in every detection post-process) is exported as
``GatherND(x, Transpose(NonZero(mask), [1, 0]))``: the mask's non-zero positions written out as an index list and
read back. The fused node selects with the mask directly (one pass, no index list); torchvision's SSDlite has 180
of them, ~35 us each as three nodes. The NonZero and Transpose stay where something else reads them.

Matched: a GatherND with ``batch_dims`` 0 whose indices are a Transpose by the constant ``[1, 0]`` of a NonZero
whose input has a static rank of at least 1.

>>> MaskedGatherFusion()(model).modified  # doctest: +SKIP
True
"""

from __future__ import annotations

from vinerun.ir.node import Node, Output
from vinerun.plugins.cpu.fused_ops import MaskedGather
from vinerun.transformations.pass_infra import ReplaceMatches


def _fused(match: tuple[Node, Output, Output]) -> MaskedGather:
    gather, data, mask = match
    fused = MaskedGather(data, mask, name=gather.friendly_name)
    fused.rt_info.update(gather.rt_info)
    return fused


class MaskedGatherFusion(ReplaceMatches):
    """Fuse ``GatherND(data, Transpose(NonZero(mask), [1, 0]))`` into ``MaskedGather(data, mask)``."""

    def __init__(self) -> None:
        super().__init__(_fused)

    def match(self, node: Node) -> tuple[Node, Output, Output] | None:
        if node.type_name != "GatherND" or node.batch_dims != 0:  # type: ignore[attr-defined]
            return None
        transpose = node.input_value(1).node
        perm = transpose.const_input(1) if transpose.type_name == "Transpose" else None
        if perm is None or perm.shape != (2,) or perm.tolist() != [1, 0]:
            return None
        nonzero = transpose.input_value(0).node
        if nonzero.type_name != "NonZero":
            return None
        mask = nonzero.input_value(0)
        rank, data_rank = mask.get_partial_shape().rank, node.input_value(0).get_partial_shape().rank
        if rank.is_dynamic or rank.get_length() == 0:
            return None
        if data_rank.is_static and data_rank.get_length() < rank.get_length():
            return None
        return node, node.input_value(0), mask

    def covered(self, match: tuple[Node, Output, Output]) -> tuple[Node, list[Node]]:
        return match[0], [match[0]]
