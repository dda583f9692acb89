"""SplitConvConcatToGroupConv: ``Split`` along channels -> N equal Convolutions -> ``Concat`` along channels becomes
one GroupConvolution with the N filters stacked as its groups (grouped convolutions as older exporters write them:
AlexNet's two towers, ShuffleNet's and ResNeXt's branches).

Matched: a Split (or a VariadicSplit into equal constant parts) on axis 1 whose outputs each feed, alone, one
Convolution; the Convolutions share every attribute, have constant filters of one shape and element type, and each
is read only by one Concat on axis 1 that takes them, and nothing else, in the split's order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node
from vinerun.ops.convolution import GroupConvolution
from vinerun.transformations.pass_infra import ReplaceMatches

_ATTRS = ("strides", "pads_begin", "pads_end", "dilations", "auto_pad")


@dataclass
class SplitConvConcat:
    """A matched pattern: the split, its convolutions in order, the concat."""

    split: Node
    convs: list[Node]
    concat: Node


def _channel_axis(node: Node, axis: int) -> bool:
    rank = node.get_output_partial_shape(0).rank
    return rank.is_static and axis % rank.get_length() == 1


def _equal_split(split: Node) -> bool:
    """Whether ``split`` cuts axis 1 into equal parts."""
    axis = split.const_input(1)
    if split.type_name not in ("Split", "VariadicSplit") or axis is None or axis.size != 1:
        return False
    if not _channel_axis(split.input_value(0).node, int(axis.reshape(-1)[0])):
        return False
    if split.type_name == "Split":
        return True
    parts = split.get_output_partial_shape
    return all(parts(i)[1].is_static and parts(i)[1] == parts(0)[1] for i in range(split.get_output_size()))


def _sole_reader(node: Node, index: int = 0) -> Node | None:
    targets = node.output(index).get_target_inputs()
    return next(iter(targets)).get_node() if len(targets) == 1 else None


def match_split_conv_concat(concat: Node) -> SplitConvConcat | None:
    """The pattern ending at ``concat``, or None."""
    if concat.type_name != "Concat" or concat.get_input_size() < 2 or not _channel_axis(concat, concat.axis):
        return None
    convs = [o.node for o in concat.input_values()]
    first = convs[0]
    if any(c.type_name != "Convolution" or c.get_output_size() != 1 or _sole_reader(c) is not concat
           for c in convs) or len({id(c) for c in convs}) != len(convs):
        return None
    split = first.input_value(0).node
    if not _equal_split(split) or split.get_output_size() != len(convs):
        return None
    weights = [c.const_input(1) for c in convs]
    for i, c in enumerate(convs):
        src = c.input_value(0)
        if src.node is not split or src.index != i or _sole_reader(split, i) is not c or weights[i] is None \
                or not isinstance(c.input_value(1).node, Constant) or weights[i].shape != weights[0].shape \
                or weights[i].dtype != weights[0].dtype \
                or any(getattr(c, a) != getattr(first, a) for a in _ATTRS):
            return None
    return SplitConvConcat(split, convs, concat)


def merge(match: SplitConvConcat) -> Node:
    """The GroupConvolution computing ``match``."""
    first = match.convs[0]
    filters = np.stack([c.const_input(1) for c in match.convs])  # [G, O/G, I/G, *K]
    group = GroupConvolution(match.split.input_value(0), Constant(filters).output(0), name=match.concat.friendly_name,
                             **{a: getattr(first, a) for a in _ATTRS})
    group.rt_info.update(first.rt_info)
    return group


class SplitConvConcatToGroupConv(ReplaceMatches):
    """Replace each Split -> N Convolutions -> Concat over channels with one GroupConvolution.

    >>> SplitConvConcatToGroupConv()(model).modified  # doctest: +SKIP
    True
    """

    def __init__(self) -> None:
        super().__init__(merge)

    def match(self, node: Node) -> SplitConvConcat | None:
        return match_split_conv_concat(node)

    def covered(self, match: SplitConvConcat) -> tuple[Node, list[Node]]:
        return match.concat, [match.split, *match.convs, match.concat]
