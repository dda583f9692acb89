"""ONNX sequence ops (ONNX-only, version "onnx").

A sequence value at runtime is a Python list of NumPy arrays. A sequence output declares the
element type of its tensors and a dynamic shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.interpreter import run_body
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type


def _as_list(value: Any, what: str = "input 0") -> list:
    if not isinstance(value, list):
        raise ValidationError(f"{what} must be a sequence (a list of tensors), got {type(value).__name__}")
    return value


def _position(pos: Any, length: int, allow_end: bool) -> int:
    p = int(np.asarray(pos).reshape(-1)[0])
    hi = length if allow_end else length - 1
    if not -length <= p <= hi:
        raise ValidationError(f"position {p} is out of range for a sequence of length {length}")
    return p + length if p < 0 else p


def _seq(et: Type) -> list[tuple[Type, PartialShape]]:
    return [(et, PartialShape.dynamic())]


@register_op
class SequenceEmpty(Node):
    """An empty sequence of ``element_type`` tensors."""

    type_name, version, num_inputs = "SequenceEmpty", "onnx", (0, 0)
    element_type = Attr("type", Type.f32)

    def infer(self) -> list:
        return _seq(self.element_type)

    def evaluate(self, inputs: list) -> list:
        return [[]]


@register_op
class SequenceConstruct(Node):
    """A sequence of its inputs (all of one element type)."""

    type_name, version, num_inputs = "SequenceConstruct", "onnx", (1, 1 << 30)

    def infer(self) -> list:
        types = {self.get_input_element_type(i) for i in range(self.get_input_size())} - {Type.dynamic}
        if len(types) > 1:
            raise ValidationError(f"inputs have different element types: {sorted(t.get_type_name() for t in types)}")
        return _seq(types.pop() if types else Type.dynamic)

    def evaluate(self, inputs: list) -> list:
        return [list(inputs)]


@register_op
class SequenceInsert(Node):
    """``SequenceInsert(seq, tensor[, position])``: a new sequence with ``tensor`` inserted (default: at the end)."""

    type_name, version, num_inputs = "SequenceInsert", "onnx", (2, 3)

    def infer(self) -> list:
        a, b = self.get_input_element_type(0), self.get_input_element_type(1)
        if a.is_static() and b.is_static() and a != b:
            raise ValidationError(f"cannot insert a {b.get_type_name()} tensor into a {a.get_type_name()} sequence")
        return _seq(a if a.is_static() else b)

    def evaluate(self, inputs: list) -> list:
        seq = list(_as_list(inputs[0]))
        pos = len(seq) if len(inputs) < 3 or inputs[2] is None else _position(inputs[2], len(seq), True)
        seq.insert(pos, inputs[1])
        return [seq]


@register_op
class SequenceAt(Node):
    """``SequenceAt(seq, position)``: one tensor of the sequence (negative positions count from the end)."""

    type_name, version, num_inputs = "SequenceAt", "onnx", (2, 2)

    def infer(self) -> list:
        return [(self.get_input_element_type(0), PartialShape.dynamic())]

    def evaluate(self, inputs: list) -> list:
        seq = _as_list(inputs[0])
        return [seq[_position(inputs[1], len(seq), False)]]


@register_op
class SequenceErase(Node):
    """``SequenceErase(seq[, position])``: a new sequence without one tensor (default: the last)."""

    type_name, version, num_inputs = "SequenceErase", "onnx", (1, 2)

    def infer(self) -> list:
        return _seq(self.get_input_element_type(0))

    def evaluate(self, inputs: list) -> list:
        seq = list(_as_list(inputs[0]))
        pos = len(seq) - 1 if len(inputs) < 2 or inputs[1] is None else _position(inputs[1], len(seq), False)
        if not seq:
            raise ValidationError("cannot erase from an empty sequence")
        del seq[pos]
        return [seq]


@register_op
class SequenceLength(Node):
    """The number of tensors in a sequence, as an i64 scalar."""

    type_name, version, num_inputs = "SequenceLength", "onnx", (1, 1)

    def infer(self) -> list:
        return [(Type.i64, PartialShape([]))]

    def evaluate(self, inputs: list) -> list:
        return [np.array(len(_as_list(inputs[0])), dtype=np.int64)]


@register_op
class ConcatFromSequence(Node):
    """Concatenates (or, with ``new_axis``, stacks) a sequence's tensors along ``axis``."""

    type_name, version, num_inputs = "ConcatFromSequence", "onnx", (1, 1)
    axis = Attr("int")
    new_axis = Attr("bool", False)

    def infer(self) -> list:
        return [(self.get_input_element_type(0), PartialShape.dynamic())]

    def evaluate(self, inputs: list) -> list:
        seq = _as_list(inputs[0])
        if not seq:
            raise ValidationError("cannot concatenate an empty sequence")
        rank = seq[0].ndim + (1 if self.new_axis else 0)
        if not -rank <= self.axis < rank:
            raise ValidationError(f"axis {self.axis} is out of range for rank {rank}")
        return [np.stack(seq, axis=self.axis) if self.new_axis else np.concatenate(seq, axis=self.axis)]


@register_op
class SplitToSequence(Node):
    """``SplitToSequence(x[, split])``: pieces of ``x`` along ``axis`` as a sequence.

    Without ``split``: pieces of size 1 (the axis dropped unless ``keepdims``); a scalar ``split``
    gives equal pieces (the last may be smaller); a 1-D ``split`` gives the listed lengths.
    """

    type_name, version, num_inputs = "SplitToSequence", "onnx", (1, 2)
    axis = Attr("int", 0)
    keepdims = Attr("bool", True)

    def infer(self) -> list:
        return _seq(self.get_input_element_type(0))

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        split = inputs[1] if len(inputs) > 1 else None
        if not -x.ndim <= self.axis < x.ndim:
            raise ValidationError(f"axis {self.axis} is out of range for rank {x.ndim}")
        axis = self.axis % x.ndim
        n = x.shape[axis]
        if split is None:
            parts = np.split(x, n, axis=axis) if n else []
            return [[p.squeeze(axis) for p in parts] if not self.keepdims else parts]
        split = np.asarray(split)
        if split.ndim == 0:
            step = int(split)
            if step <= 0:
                raise ValidationError(f"split must be positive, got {step}")
            bounds = list(range(step, n, step))
        else:
            lengths = [int(v) for v in split]
            if sum(lengths) != n or min(lengths, default=0) < 0:
                raise ValidationError(f"split lengths {lengths} do not add up to the axis length {n}")
            bounds = list(np.cumsum(lengths)[:-1])
        return [np.split(x, bounds, axis=axis)]


@register_op
class SequenceMap(Node):
    """Runs ``body`` on each position of its sequence inputs (tensor inputs are passed whole).

    Input 0 is a sequence; the other first ``mapped_inputs`` inputs (-1: all) are sequences of the
    same length or tensors; inputs after those (values the body captures) are passed whole. Each
    body result becomes an output sequence.
    """

    type_name, version, num_inputs = "SequenceMap", "onnx", (1, 1 << 30)
    body = Attr("model")
    mapped_inputs = Attr("int", -1)

    def infer(self) -> list:
        n = len(self.body.get_parameters())
        if n != self.get_input_size():
            raise ValidationError(f"the body takes {n} inputs, the op has {self.get_input_size()}")
        return [_seq(r.get_output_element_type(0))[0] for r in self.body.get_results()]

    def evaluate(self, inputs: list) -> list:
        length = len(_as_list(inputs[0]))
        mapped = len(inputs) if self.mapped_inputs < 0 else self.mapped_inputs
        is_seq = [k < mapped and isinstance(v, list) for k, v in enumerate(inputs)]
        for k, v in enumerate(inputs):
            if is_seq[k] and len(v) != length:
                raise ValidationError(f"input {k} has {len(v)} tensors, input 0 has {length}")
        outs: list[list[Any]] = [[] for _ in self.body.get_results()]
        for i in range(length):
            values = run_body(self.body, [v[i] if s else v for v, s in zip(inputs, is_seq, strict=False)])
            for out, v in zip(outs, values, strict=False):
                out.append(v)
        return outs

