"""A Split or VariadicSplit of a 4-D tensor's channels becomes one Slice per part that something reads.

ShuffleNet's ``x.chunk(2, dim=1)`` cuts a channels-last feature map along its channels: each part is a view with
gaps (every pixel's channels are interleaved), which a convolution cannot read inside a native segment, and a
node with two such outputs cannot hand either over as a copy. A Slice has one output: where its view has gaps,
the segment copies it into a dense array of the same order (one oneDNN reorder), and the convolution and the
Concat after it stay in the segment (ShuffleNetV2: 27 plan items, 13 of them convolutions left to Python, ->
one segment).

Matched: static input shape of rank 4, a constant axis that is 1, constant lengths (VariadicSplit).
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.ops.slicing import Slice
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _i64(*values: int) -> Constant:
    return Constant(np.array(values, np.int64))


def channel_parts(node: Node) -> list[int] | None:
    """The channel counts of the parts a channel split of a static 4-D tensor makes, else None."""
    if node.type_name not in ("Split", "VariadicSplit"):
        return None
    shape = node.get_input_partial_shape(0)
    axis = node.const_input(1)
    if not shape.is_static or len(shape) != 4 or axis is None or int(np.asarray(axis).reshape(-1)[0]) % 4 != 1:
        return None
    parts = [int(node.get_output_partial_shape(i)[1].get_length()) for i in range(node.get_output_size())
             if node.get_output_partial_shape(i).is_static]
    return parts if len(parts) == node.get_output_size() else None


class ChannelSplitToSlices(InPlacePass):
    """Replace each channel Split / VariadicSplit of a 4-D tensor with a Slice per read part.

    >>> ChannelSplitToSlices()(model).modified
    True
    """

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            parts = channel_parts(node)
            if parts is None:
                continue
            start = 0
            for i, size in enumerate(parts):
                if node.output(i).get_target_inputs():
                    part = Slice(node.input_value(0), _i64(start), _i64(start + size), _i64(1), _i64(1),
                                 name=f"{node.friendly_name}/{i}")
                    replace_output_update_name(node.output(i), part.output(0))
                start += size
            node.detach()
            modified = True
        return PassResult(model, modified)
