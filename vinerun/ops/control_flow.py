"""Control flow: the body port maps shared by If / Loop / TensorIterator, and If (opset8).

Bodies are ``Model``s run with :func:`vinerun.ir.interpreter.run_body`. How the op's inputs reach
the body's Parameters and how the body's Results become the op's outputs is described, as in
OpenVINO, by *port descriptions*:

- ``InvariantInputDescription``: the same input value every iteration;
- ``SliceInputDescription``: iteration ``i`` gets the ``i``-th part of an input along ``axis``;
- ``MergedInputDescription``: a loop-carried value (initial input, then a body result);
- ``BodyOutputDescription``: a body result's value at one iteration (``-1``: the last);
- ``ConcatOutputDescription``: a body result's values of all iterations concatenated along ``axis``.

Runtime values may be NumPy arrays, Python lists (ONNX sequences) or ``None`` (empty optionals).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.interpreter import run_body
from vinerun.ir.model import Model
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type, storage_dtype


@dataclass(frozen=True)
class InvariantInputDescription:
    """Op input ``input_index`` feeds body parameter ``body_parameter_index`` unchanged."""

    input_index: int
    body_parameter_index: int


@dataclass(frozen=True)
class SliceInputDescription:
    """Iteration ``i`` reads part ``i`` (``part_size`` wide, step ``stride``) of the input along ``axis``.

    Negative ``start``/``end`` count from the end (``-1`` is the size of the axis); a negative
    ``stride`` walks backwards, part ``i`` being ``[start - (i+1)*part_size, start - i*part_size)``.
    """

    input_index: int
    body_parameter_index: int
    start: int
    stride: int
    part_size: int
    end: int
    axis: int


@dataclass(frozen=True)
class MergedInputDescription:
    """A loop-carried value: the input at the first iteration, then body result ``body_value_index``."""

    input_index: int
    body_parameter_index: int
    body_value_index: int


@dataclass(frozen=True)
class BodyOutputDescription:
    """Op output ``output_index`` is body result ``body_value_index`` at ``iteration`` (-1: the last)."""

    body_value_index: int
    output_index: int
    iteration: int = -1


@dataclass(frozen=True)
class ConcatOutputDescription:
    """Op output ``output_index`` concatenates body result ``body_value_index`` over iterations."""

    body_value_index: int
    output_index: int
    start: int
    stride: int
    part_size: int
    end: int
    axis: int


InputDescription = InvariantInputDescription | SliceInputDescription | MergedInputDescription
OutputDescription = BodyOutputDescription | ConcatOutputDescription


def merge_types(a: Type, b: Type) -> Type:
    """The common element type of two branches, or dynamic if they differ."""
    return a if a == b else Type.dynamic


def merge_shapes(a: PartialShape, b: PartialShape) -> PartialShape:
    """The most precise shape both ``a`` and ``b`` satisfy (dims that differ become dynamic)."""
    if a.rank.is_dynamic or b.rank.is_dynamic or len(a) != len(b):
        return PartialShape.dynamic()
    return PartialShape([x if x.is_static and x == y else Dimension() for x, y in zip(a, b, strict=False)])


def body_result_type(body: Model, index: int) -> tuple[Type, PartialShape]:
    res = body.get_results()
    if not 0 <= index < len(res):
        raise ValidationError(f"the body has {len(res)} results, no result {index}")
    return res[index].get_output_element_type(0), res[index].get_output_partial_shape(0)


def check_parameter_index(body: Model, index: int) -> None:
    n = len(body.get_parameters())
    if not 0 <= index < n:
        raise ValidationError(f"the body has {n} parameters, no parameter {index}")


def empty_like_result(body: Model, index: int, axis: int) -> np.ndarray:
    """A zero-length array of body result ``index``'s type, empty along ``axis`` (no iterations)."""
    et, ps = body_result_type(body, index)
    dims = [d.get_length() if d.is_static else 0 for d in ps] if ps.rank.is_static else [0]
    if dims:
        dims[axis if axis >= 0 else axis + len(dims)] = 0
    return np.zeros(dims, dtype=storage_dtype(et) if et.is_static() else np.float32)


@register_op
class If(Node):
    """``If(cond, *inputs)``: runs ``then_body`` or ``else_body``; outputs are the chosen body's results."""

    type_name, version, num_inputs = "If", "opset8", (1, 1 << 30)
    then_body = Attr("model")
    else_body = Attr("model")
    then_inputs = Attr("any", ())
    else_inputs = Attr("any", ())
    then_outputs = Attr("any", ())
    else_outputs = Attr("any", ())

    def _outputs_by_index(self, descs: Any) -> dict[int, int]:
        return {d.output_index: d.body_value_index for d in descs}

    def infer(self) -> list:
        ct = self.get_input_element_type(0)
        if ct.is_static() and ct != Type.boolean:
            raise ValidationError(f"the condition must be boolean, got {ct.get_type_name()}")
        for body, descs in ((self.then_body, self.then_inputs), (self.else_body, self.else_inputs)):
            for d in descs:
                check_parameter_index(body, d.body_parameter_index)
                if not 0 < d.input_index < self.get_input_size():
                    raise ValidationError(f"input description refers to input {d.input_index}, "
                                          f"the op has {self.get_input_size()}")
        then_map, else_map = self._outputs_by_index(self.then_outputs), self._outputs_by_index(self.else_outputs)
        if sorted(then_map) != sorted(else_map) or sorted(then_map) != list(range(len(then_map))):
            raise ValidationError("then_outputs and else_outputs must describe the same outputs 0..n-1")
        out = []
        for i in range(len(then_map)):
            t_et, t_ps = body_result_type(self.then_body, then_map[i])
            e_et, e_ps = body_result_type(self.else_body, else_map[i])
            out.append((merge_types(t_et, e_et), merge_shapes(t_ps, e_ps)))
        return out

    def evaluate(self, inputs: list) -> list:
        cond = inputs[0]
        if cond is None or np.asarray(cond).size != 1:
            raise ValidationError("the condition must hold exactly one value")
        taken = bool(np.asarray(cond).reshape(-1)[0])
        body = self.then_body if taken else self.else_body
        descs = self.then_inputs if taken else self.else_inputs
        args: list[Any] = [None] * len(body.get_parameters())
        for d in descs:
            args[d.body_parameter_index] = inputs[d.input_index]
        values = run_body(body, args)
        outs: list[Any] = [None] * self.get_output_size()
        for d in (self.then_outputs if taken else self.else_outputs):
            outs[d.output_index] = values[d.body_value_index]
        return outs
