"""ShuffleChannels (opset1): interleave ``group`` groups of channels."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ops._shape_helpers import rank_of


@register_op
class ShuffleChannels(Node):
    """Split dimension ``axis`` into ``[group, C / group]``, swap the two, merge them back."""

    type_name, version, num_inputs = "ShuffleChannels", "opset1", (1, 1)
    axis = Attr("int", 1)
    group = Attr("int", 1)

    def _axis(self, rank: int) -> int:
        if not -rank <= self.axis < rank:
            raise ValidationError(f"axis {self.axis} is out of range for rank {rank}")
        return self.axis + rank if self.axis < 0 else self.axis

    def infer(self) -> list:
        if self.group < 1:
            raise ValidationError(f"group must be at least 1, got {self.group}")
        ps = self.get_input_partial_shape(0)
        rank = rank_of(ps)
        if rank is not None:
            if rank < 1:
                raise ValidationError("the input must have rank 1 or more")
            d = ps[self._axis(rank)]
            if d.is_static and d.get_length() % self.group:
                raise ValidationError(f"dimension {self.axis} ({d}) must be divisible by group {self.group}")
        return [(self.get_input_element_type(0), ps)]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axis = self._axis(x.ndim)
        shape = x.shape
        split = (*shape[:axis], self.group, shape[axis] // self.group, *shape[axis + 1:])
        y = x.reshape(split).swapaxes(axis, axis + 1)
        return [np.ascontiguousarray(y).reshape(shape)]
