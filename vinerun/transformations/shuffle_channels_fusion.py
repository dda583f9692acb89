"""ShuffleChannels fusion: the channel shuffle exporters write as Reshape, Transpose, Reshape becomes one
ShuffleChannels (as OpenVINO's ShuffleChannelsFusion).

ShuffleNet's ``x.view(N, g, C / g, H, W).transpose(1, 2).reshape(N, C, H, W)``: as written, the Reshape to five
dimensions wants the convolution's output in NCHW order (a copy out of channels-last) and the Transpose copies
it again; one ShuffleChannels reads and writes channels-last data in one pass. Matched: a rank-4 ``x`` of static
shape, ``Reshape(x)`` to ``[N, g, C / g, H, W]``, ``Transpose`` by ``[0, 2, 1, 3, 4]`` and ``Reshape`` back to
``x``'s shape, the intermediates read by nothing else.
"""

from __future__ import annotations

from vinerun.ir.node import Node
from vinerun.ops.shuffle_channels import ShuffleChannels
from vinerun.transformations.fusions import _sole_consumer
from vinerun.transformations.pass_infra import ReplaceMatches


def _static(shape) -> tuple[int, ...] | None:  # noqa: ANN001 - a PartialShape
    return tuple(int(d) for d in shape.to_shape()) if shape.is_static else None


def _match(last: Node) -> tuple[Node, int] | None:
    """(the first Reshape, the group count) when ``last`` closes a channel shuffle."""
    if last.type_name != "Reshape":
        return None
    transpose = last.input_value(0).node
    if transpose.type_name != "Transpose" or _sole_consumer(transpose) is not last:
        return None
    order = transpose.const_input(1)
    if order is None or [int(a) for a in order.reshape(-1)] != [0, 2, 1, 3, 4]:
        return None
    first = transpose.input_value(0).node
    if first.type_name != "Reshape" or _sole_consumer(first) is not transpose:
        return None
    x, split, out = (_static(first.get_input_partial_shape(0)), _static(first.get_output_partial_shape(0)),
                     _static(last.get_output_partial_shape(0)))
    if x is None or split is None or len(x) != 4 or out != x or len(split) != 5:
        return None
    n, c, h, w = x
    if split[0] != n or split[3:] != (h, w) or split[1] * split[2] != c:
        return None
    return first, split[1]


def _fused(match: tuple[Node, Node, int]) -> ShuffleChannels:
    first, last, group = match
    return ShuffleChannels(first.input_value(0), axis=1, group=group, name=last.friendly_name)


class ShuffleChannelsFusion(ReplaceMatches):
    """Replace each Reshape-Transpose-Reshape channel shuffle with ShuffleChannels(axis=1).

    >>> ShuffleChannelsFusion()(model).modified
    True
    """

    def __init__(self) -> None:
        super().__init__(_fused)

    def match(self, node: Node) -> tuple[Node, Node, int] | None:
        found = _match(node)
        return None if found is None else (found[0], node, found[1])

    def covered(self, match: tuple[Node, Node, int]) -> tuple[Node, list[Node]]:
        first, last, _ = match
        return last, [last, last.input_value(0).node, first]  # each read only by the next
