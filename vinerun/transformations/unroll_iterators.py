"""Unroll TensorIterator (and Loop with a constant trip count) into the graph around it: one copy of the body per
iteration, wired as the port descriptions say (OpenVINO's ``UnrollTensorIterator``; the GPU plugin's
``GPU_ENABLE_LOOP_UNROLLING``).

A sliced input becomes a Slice of the outer value per iteration; a merged (loop-carried) input reads the previous
iteration's body value (the outer value first); an invariant input reads the outer value. A body output taken at
one iteration reads that iteration's value; a concatenated output is a Concat of every iteration's value (in
reverse for a negative stride). Only iterators with a count known at compile time and at most ``limit``
iterations are unrolled; a Loop must have a Constant trip count, a Constant true execution condition, and no
body condition output or one that is a Constant true.
"""

from __future__ import annotations

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.graph_edit import replace_output_update_name
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ops.concat_split import Concat
from vinerun.ops.control_flow import (
    BodyOutputDescription,
    ConcatOutputDescription,
    InvariantInputDescription,
    MergedInputDescription,
    SliceInputDescription,
)
from vinerun.ops.loop import slice_count
from vinerun.ops.slicing import Slice
from vinerun.transformations.pass_infra import InPlacePass, PassResult


def _const(values: list[int]) -> Output:
    return Constant(np.array(values, np.int64)).output(0)


def _constant_true(out: Output | None) -> bool:
    return out is not None and isinstance(out.node, Constant) and bool(np.asarray(out.node.get_value()).all())


def iterations(node: Node, limit: int) -> int | None:
    """How many times ``node``'s body runs, when that is known now and at most ``limit``; else None."""
    if node.type_name == "TensorIterator":
        counts = []
        for d in node.input_descriptions:  # type: ignore[attr-defined]
            if isinstance(d, SliceInputDescription):
                shape = node.get_input_partial_shape(d.input_index)
                if shape.rank.is_dynamic or shape[d.axis].is_dynamic:
                    return None
                counts.append(slice_count(d, shape[d.axis].get_length()))
        n = min(counts) if counts else None
    elif node.type_name == "Loop":
        iteration_port, condition_port = node.special_body_ports  # type: ignore[attr-defined]
        trip = node.input_value(0)
        if iteration_port >= 0 or not isinstance(trip.node, Constant) or not _constant_true(node.input_value(1)):
            return None
        if condition_port >= 0 and not _constant_true(node.body.get_results()[condition_port].input_value(0)):  # type: ignore[attr-defined]
            return None
        n = int(np.asarray(trip.node.get_value()).reshape(-1)[0])
        if any(isinstance(d, SliceInputDescription) for d in node.input_descriptions):  # type: ignore[attr-defined]
            return None
    else:
        return None
    return n if n is not None and 0 < n <= limit else None


def _part(value: Output, d: SliceInputDescription, i: int) -> Output:
    """Part ``i`` of ``value`` as ``d`` cuts it (see :func:`vinerun.ops.loop.slice_part`)."""
    dim = value.partial_shape[d.axis].get_length()
    start = d.start if d.start >= 0 else d.start + dim + 1
    lo = start + i * d.stride if d.stride > 0 else start + i * d.stride - d.part_size
    return Slice(value, _const([lo]), _const([lo + d.part_size]), _const([1]), _const([d.axis])).output(0)


def unroll(node: Node, n: int) -> None:
    """Replace ``node`` (a TensorIterator or Loop running ``n`` times) with ``n`` copies of its body."""
    outer = node.input_values()
    carried: dict[int, Output] = {}  # body parameter index -> the value it reads in this iteration
    per_iteration: list[list[Output]] = []
    for i in range(n):
        body: Model = node.body.clone()  # type: ignore[attr-defined]
        params = body.get_parameters()
        for d in node.input_descriptions:  # type: ignore[attr-defined]
            if isinstance(d, SliceInputDescription):
                value = _part(outer[d.input_index], d, i)
            elif isinstance(d, MergedInputDescription):
                value = carried.get(d.body_parameter_index, outer[d.input_index])
            elif isinstance(d, InvariantInputDescription):
                value = outer[d.input_index]
            else:
                continue
            params[d.body_parameter_index].output(0).replace(value)
        values = [r.input_value(0) for r in body.get_results()]
        for d in node.input_descriptions:  # type: ignore[attr-defined]
            if isinstance(d, MergedInputDescription):
                carried[d.body_parameter_index] = values[d.body_value_index]
        per_iteration.append(values)
    for d in node.output_descriptions:  # type: ignore[attr-defined]
        if isinstance(d, BodyOutputDescription):
            value = per_iteration[d.iteration if d.iteration >= 0 else n - 1][d.body_value_index]
        elif isinstance(d, ConcatOutputDescription):
            parts = [v[d.body_value_index] for v in per_iteration]
            value = Concat(parts[::-1] if d.stride < 0 else parts, axis=d.axis).output(0)
        else:
            continue
        replace_output_update_name(node.output(d.output_index), value)
    node.detach()


class UnrollIterators(InPlacePass):
    """Unroll every TensorIterator / Loop whose iteration count is known and at most ``limit``."""

    def __init__(self, limit: int = 256):
        self.limit = limit

    def call(self, model: Model) -> PassResult:
        modified = False
        for node in model.get_ordered_ops():
            n = iterations(node, self.limit)
            if n is not None:
                unroll(node, n)
                modified = True
        if modified:
            model.validate_nodes_and_infer_types()
        return PassResult(model, modified)
