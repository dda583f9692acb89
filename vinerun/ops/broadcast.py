"""Broadcast (opset1, opset3) and Tile (opset1): making a tensor bigger by repetition."""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node, broadcast_shapes
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._shape_helpers import check_index_type, partial_dims, partial_ints, rank_of, shape_length


def _numpy_target(data: PartialShape, target: PartialShape) -> PartialShape:
    """Check that ``data`` broadcasts one-way to ``target``; return ``target`` with known dims filled in."""
    rd, rt = rank_of(data), rank_of(target)
    if rd is None or rt is None:
        return target
    if rd > rt:
        raise ValidationError(f"data of shape {data} cannot be broadcast to the smaller rank of {target}")
    out = list(target)
    for i, d in enumerate(data):
        j = rt - rd + i
        t = out[j]
        if d.is_static and t.is_static and d != 1 and d != t:
            raise ValidationError(f"data of shape {data} cannot be broadcast to {target}")
        if t.is_dynamic and d.is_static and d != 1:
            out[j] = d
    return PartialShape(out)


def _explicit_shape(data: tuple, target: list[int], mapping: list[int]) -> tuple:
    """The data viewed with 1s in the output axes not in ``mapping`` (explicit mode)."""
    if len(mapping) != len(data) or sorted(mapping) != list(mapping):
        raise ValidationError(f"axes_mapping {mapping} must list one increasing output axis per data axis")
    view = [1] * len(target)
    for d, a in zip(data, mapping, strict=True):
        if not 0 <= a < len(target) or (d != 1 and d != target[a]):
            raise ValidationError(f"data dim {d} does not map onto output axis {a} of {target}")
        view[a] = d
    return tuple(view)


@register_op
class Broadcast(Node):
    """Broadcast input 0 to the shape in input 1 (``mode``: numpy, bidirectional or explicit)."""

    type_name, version, num_inputs = "Broadcast", "opset3", (2, 3)
    mode = Attr("str", "numpy")

    def infer(self) -> list:
        check_index_type(self, 1, "the target shape")
        et, data = self.get_input_element_type(0), self.get_input_partial_shape(0)
        target = partial_dims(partial_ints(self, 1), shape_length(self, 1))
        if self.mode == "numpy":
            return [(et, _numpy_target(data, target))]
        if self.mode == "bidirectional":
            return [(et, broadcast_shapes(data, target))]
        if self.mode == "explicit":
            if self.get_input_size() < 3:
                raise ValidationError("explicit mode needs axes_mapping (input 2)")
            return [(et, target)]
        raise ValidationError(f"unsupported broadcast mode '{self.mode}'")

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        target = [int(v) for v in np.asarray(inputs[1]).reshape(-1)]
        if self.mode == "bidirectional":
            shape = np.broadcast_shapes(x.shape, tuple(target))
        elif self.mode == "explicit":
            mapping = [int(v) for v in np.asarray(inputs[2]).reshape(-1)]
            x, shape = x.reshape(_explicit_shape(x.shape, target, mapping)), tuple(target)
        else:
            _numpy_target(PartialShape(x.shape), PartialShape(target))
            shape = tuple(target)
        return [np.array(np.broadcast_to(x, shape), order="C")]


@register_op
class BroadcastV1(Broadcast):
    """Broadcast-1 (modes numpy and explicit)."""

    type_name, version = "Broadcast", "opset1"


@register_op
class Tile(Node):
    """Repeat input 0 ``repeats[i]`` times along each axis (the shorter of the two is padded with 1s)."""

    type_name, version, num_inputs = "Tile", "opset1", (2, 2)

    def infer(self) -> list:
        check_index_type(self, 1, "repeats")
        et, ps = self.get_input_element_type(0), self.get_input_partial_shape(0)
        reps, r = partial_ints(self, 1), rank_of(ps)
        if r is None:
            return [(et, PartialShape.dynamic())]
        if reps is None:
            n = shape_length(self, 1)
            if n is None or n.is_dynamic:
                return [(et, PartialShape.dynamic())]
            return [(et, PartialShape.dynamic(max(r, n.get_length())))]
        if any(v is not None and v < 0 for v in reps):
            raise ValidationError(f"repeats {reps} must not be negative")
        n = max(r, len(reps))
        dims = [Dimension(1)] * (n - r) + list(ps)
        reps = [1] * (n - len(reps)) + reps
        return [(et, PartialShape([Dimension() if k is None else d * k for d, k in zip(dims, reps, strict=True)]))]

    def evaluate(self, inputs: list) -> list:
        reps = [int(v) for v in np.asarray(inputs[1]).reshape(-1)]
        x = inputs[0]
        if not reps:
            return [x.copy()]
        return [np.tile(x, reps)]
