"""Iterating ops: TensorIterator (opset1) and Loop (opset5).

Both run ``body`` once per iteration, wiring inputs and outputs through the port descriptions of
:mod:`vinerun.ops.control_flow`. TensorIterator runs as many iterations as its sliced inputs
have parts; Loop runs while ``trip_count`` (``-1``: unbounded) and the condition allow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.interpreter import run_body
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type, storage_dtype
from vinerun.ops.control_flow import (
    BodyOutputDescription,
    ConcatOutputDescription,
    MergedInputDescription,
    SliceInputDescription,
    body_result_type,
    check_parameter_index,
    empty_like_result,
    merge_shapes,
)


def _bounds(start: int, end: int, dim: int) -> tuple[int, int]:
    return (start if start >= 0 else start + dim + 1), (end if end >= 0 else end + dim + 1)


def slice_count(d: SliceInputDescription, dim: int) -> int:
    """How many parts ``d`` cuts from an axis of length ``dim``."""
    start, end = _bounds(d.start, d.end, dim)
    span = end - start if d.stride > 0 else start - end
    step = abs(d.stride)
    if span < d.part_size:
        return 0
    return (span - d.part_size) // step + 1


def slice_part(value: np.ndarray, d: SliceInputDescription, i: int) -> np.ndarray:
    """Part ``i`` of ``value`` as ``d`` cuts it (the axis is kept, ``part_size`` long)."""
    axis = d.axis if d.axis >= 0 else d.axis + value.ndim
    start, _ = _bounds(d.start, d.end, value.shape[axis])
    lo = start + i * d.stride if d.stride > 0 else start + i * d.stride - d.part_size
    index = [slice(None)] * value.ndim
    index[axis] = slice(lo, lo + d.part_size)
    return value[tuple(index)]


class _IteratingOp(Node):
    """Shared machinery: port descriptions, type inference, and the iteration loop."""

    body = Attr("model")
    input_descriptions = Attr("any", ())
    output_descriptions = Attr("any", ())

    def get_function(self) -> Any:
        return self.body

    def _first_port_input(self) -> int:
        return 0

    def _known_iterations(self) -> int | None:
        counts = []
        for d in self.input_descriptions:
            if isinstance(d, SliceInputDescription):
                ps = self.get_input_partial_shape(d.input_index)
                if ps.rank.is_dynamic or not ps[d.axis].is_static:
                    return None
                counts.append(slice_count(d, ps[d.axis].get_length()))
        return min(counts) if counts else None

    def infer(self) -> list:
        body = self.body
        merged_init: dict[int, int] = {}
        for d in self.input_descriptions:
            check_parameter_index(body, d.body_parameter_index)
            if not self._first_port_input() <= d.input_index < self.get_input_size():
                raise ValidationError(f"input description refers to input {d.input_index}, "
                                      f"the op has {self.get_input_size()}")
            if isinstance(d, MergedInputDescription):
                body_result_type(body, d.body_value_index)
                merged_init[d.body_value_index] = d.input_index
        n_out = 1 + max((d.output_index for d in self.output_descriptions), default=-1)
        out: list[tuple[Type, PartialShape]] = [(Type.dynamic, PartialShape.dynamic())] * n_out
        iters = self._known_iterations()
        for d in self.output_descriptions:
            et, ps = body_result_type(body, d.body_value_index)
            if isinstance(d, ConcatOutputDescription):
                if ps.rank.is_static:
                    dims = list(ps)
                    axis = d.axis if d.axis >= 0 else d.axis + len(dims)
                    dims[axis] = Dimension(iters * d.part_size) if iters is not None else Dimension()
                    ps = PartialShape(dims)
            elif d.body_value_index in merged_init and self.input_value(merged_init[d.body_value_index]) is not None:
                init = self.input_value(merged_init[d.body_value_index])
                if init.element_type != et:
                    et = Type.dynamic if init.element_type.is_static() and et.is_static() else et
                ps = merge_shapes(init.partial_shape, ps)
            out[d.output_index] = (et, ps)
        return out

    # --- execution -----------------------------------------------------------------------
    def _iterate(self, inputs: list, max_iterations: int, cond: bool, iteration_param: int,
                 condition_result: int) -> list:
        body = self.body
        params = body.get_parameters()
        args: list[Any] = [None] * len(params)
        carried: list[MergedInputDescription] = []
        sliced: list[SliceInputDescription] = []
        last: dict[int, Any] = {}
        for d in self.input_descriptions:
            if isinstance(d, SliceInputDescription):
                sliced.append(d)
                continue
            args[d.body_parameter_index] = inputs[d.input_index]
            if isinstance(d, MergedInputDescription):
                carried.append(d)
                last[d.body_value_index] = inputs[d.input_index]
        for d in sliced:
            value = inputs[d.input_index]
            axis = d.axis if d.axis >= 0 else d.axis + value.ndim
            n = slice_count(d, value.shape[axis])
            max_iterations = n if max_iterations < 0 else min(max_iterations, n)
        concat: dict[int, list[Any]] = {d.body_value_index: [] for d in self.output_descriptions
                                        if isinstance(d, ConcatOutputDescription)}
        at_iteration: dict[tuple[int, int], Any] = {}
        i = 0
        while (max_iterations < 0 or i < max_iterations) and cond:
            if iteration_param >= 0:
                args[iteration_param] = np.array(i, dtype=params[iteration_param].element_type.to_dtype()
                                                 if params[iteration_param].element_type.is_static() else np.int64)
            for d in sliced:
                args[d.body_parameter_index] = slice_part(inputs[d.input_index], d, i)
            values = run_body(body, args)
            for k, v in enumerate(values):
                last[k] = v
            for k, parts in concat.items():
                parts.append(values[k])
            for d in self.output_descriptions:
                if isinstance(d, BodyOutputDescription) and d.iteration == i:
                    at_iteration[(d.body_value_index, i)] = values[d.body_value_index]
            for d in carried:
                args[d.body_parameter_index] = values[d.body_value_index]
            if condition_result >= 0:
                cond = bool(np.asarray(values[condition_result]).reshape(-1)[0])
            i += 1
        return self._collect(last, concat, at_iteration)

    def _collect(self, last: dict[int, Any], concat: dict[int, list[Any]],
                 at_iteration: dict[tuple[int, int], Any]) -> list:
        outs: list[Any] = [None] * self.get_output_size()
        for d in self.output_descriptions:
            et = self.get_output_element_type(d.output_index)
            if isinstance(d, ConcatOutputDescription):
                parts = concat[d.body_value_index]
                if d.stride < 0:
                    parts = parts[::-1]
                value = (np.concatenate(parts, axis=d.axis) if parts
                         else empty_like_result(self.body, d.body_value_index, d.axis))
            elif d.iteration >= 0:
                if (d.body_value_index, d.iteration) not in at_iteration:
                    raise ValidationError(f"output {d.output_index} wants iteration {d.iteration}, "
                                          "which did not run")
                value = at_iteration[(d.body_value_index, d.iteration)]
            else:
                if d.body_value_index not in last:
                    raise ValidationError(f"output {d.output_index} has no value: the body never ran")
                value = last[d.body_value_index]
            if isinstance(value, np.ndarray) and et.is_static() and value.dtype != storage_dtype(et):
                value = value.astype(storage_dtype(et))
            outs[d.output_index] = value
        return outs


@register_op
class TensorIterator(_IteratingOp):
    """Runs ``body`` once per part of its sliced inputs (ONNX Scan maps onto it)."""

    type_name, version, num_inputs = "TensorIterator", "opset1", (0, 1 << 30)

    def evaluate(self, inputs: list) -> list:
        if not any(isinstance(d, SliceInputDescription) for d in self.input_descriptions):
            raise ValidationError("a TensorIterator needs at least one sliced input to know its iteration count")
        return self._iterate(inputs, -1, True, -1, -1)


@register_op
class Loop(_IteratingOp):
    """``Loop(trip_count, execution_condition, *inputs)``: a while loop with at most ``trip_count`` rounds.

    ``special_body_ports`` is ``[current_iteration_input_idx, body_condition_output_idx]``
    (``-1`` where the body has no such port), as in OpenVINO.
    """

    type_name, version, num_inputs = "Loop", "opset5", (2, 1 << 30)
    special_body_ports = Attr("ints", [-1, -1])

    def _first_port_input(self) -> int:
        return 1  # the execution condition may also seed a loop-carried body parameter

    def _known_iterations(self) -> int | None:
        return None

    def infer(self) -> list:
        it, cond_out = self.special_body_ports
        if it >= 0:
            check_parameter_index(self.body, it)
        if cond_out >= 0:
            body_result_type(self.body, cond_out)
        return super().infer()

    def evaluate(self, inputs: list) -> list:
        trip, cond = inputs[0], inputs[1]
        max_iterations = -1 if trip is None else int(np.asarray(trip).reshape(-1)[0])
        go = True if cond is None else bool(np.asarray(cond).reshape(-1)[0])
        it, cond_out = self.special_body_ports
        return self._iterate(inputs, max_iterations, go, it, cond_out)
