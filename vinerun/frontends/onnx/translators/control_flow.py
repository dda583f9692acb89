"""ONNX If, Loop and Scan -> If(opset8), Loop(opset5), TensorIterator(opset1).

Values a body reads from the outer scope ("captures") become invariant inputs of the op.
As in OpenVINO, sliced body inputs keep the sliced axis (size 1) and concatenated outputs are
concatenated along an existing axis, so ONNX Scan/Loop bodies get a Squeeze after each sliced
parameter and an Unsqueeze before each scan output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.node import Output
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.ops.control_flow import (
    BodyOutputDescription,
    ConcatOutputDescription,
    If,
    InvariantInputDescription,
    MergedInputDescription,
    SliceInputDescription,
)
from vinerun.ops.loop import Loop, TensorIterator
from vinerun.ops.reshape import Squeeze, Unsqueeze


def loose_shape(ps: PartialShape) -> PartialShape:
    """Same rank, every dim dynamic: a loop-carried value may change its size between iterations."""
    return PartialShape.dynamic() if ps.rank.is_dynamic else PartialShape([Dimension()] * len(ps))


def _normalize(axis: int, rank: int | None, what: str) -> int:
    if axis >= 0:
        return axis
    if rank is None:
        raise ValueError(f"negative {what} {axis} needs a known rank")
    return axis + rank


@onnx_op("If")
def if_(ctx):
    then_sg, else_sg = ctx.subgraph("then_branch"), ctx.subgraph("else_branch")
    n = len(then_sg.model.get_results())
    if len(else_sg.model.get_results()) != n:
        raise ctx.unsupported(f"then_branch has {n} outputs, else_branch {len(else_sg.model.get_results())}")
    inputs: list[Output] = [ctx.input(0)]
    descs = []
    for sg in (then_sg, else_sg):
        d = []
        for k, value in enumerate(sg.captured):
            inputs.append(value)
            d.append(InvariantInputDescription(len(inputs) - 1, len(sg.formal) + k))
        descs.append(tuple(d))
    outs = tuple(BodyOutputDescription(i, i) for i in range(n))
    node = If(*inputs, then_body=then_sg.model, else_body=else_sg.model, then_inputs=descs[0],
              else_inputs=descs[1], then_outputs=outs, else_outputs=outs)
    return node.outputs()


@onnx_op("Loop")
def loop(ctx):
    carried = [ctx.inputs[i] for i in range(2, len(ctx.inputs))]
    n = len(carried)
    hints: list[Any] = [(Type.i64, PartialShape([])), (Type.boolean, PartialShape([]))]
    hints += [(Type.dynamic, PartialShape.dynamic()) if v is None else (v.element_type, loose_shape(v.partial_shape))
              for v in carried]
    sg = ctx.subgraph("body", hints)
    if len(sg.formal) != 2 + n:
        raise ctx.unsupported(f"the body takes {len(sg.formal)} inputs, expected {2 + n} (iteration, condition, "
                              f"{n} loop-carried values)")
    results = sg.model.get_results()
    k_scan = len(results) - 1 - n
    if k_scan < 0:
        raise ctx.unsupported(f"the body has {len(results)} outputs, fewer than 1 + {n} loop-carried values")
    body = _with_unsqueezed_results(sg.model, list(range(1 + n, len(results))), [0] * k_scan)
    trip = ctx.optional_input(0) or ctx.constant(np.int64(-1))
    cond = ctx.optional_input(1) or ctx.constant(np.bool_(True))
    inputs = [trip, cond, *carried, *sg.captured]
    ins: list[Any] = [MergedInputDescription(1, 1, 0)]
    ins += [MergedInputDescription(2 + k, 2 + k, 1 + k) for k in range(n)]
    ins += [InvariantInputDescription(2 + n + j, 2 + n + j) for j in range(len(sg.captured))]
    outs: list[Any] = [BodyOutputDescription(1 + k, k) for k in range(n)]
    outs += [ConcatOutputDescription(1 + n + k, n + k, 0, 1, 1, -1, 0) for k in range(k_scan)]
    node = Loop(*inputs, body=body, input_descriptions=tuple(ins), output_descriptions=tuple(outs),
                special_body_ports=[0, 0])
    return node.outputs()


def _with_unsqueezed_results(body: Model, indices: list[int], axes: list[int]) -> Model:
    """A copy of ``body``'s result list where results ``indices`` get a new axis (for concatenation)."""
    results = body.get_results()
    for i, axis in zip(indices, axes, strict=False):
        src = results[i].input_value(0)
        results[i] = Result(Unsqueeze(src, Constant(np.array([axis], np.int64))), name=results[i].friendly_name)
    return Model(results, body.get_parameters(), body.get_name())


def _with_squeezed_parameters(body: Model, indices: list[int], axes: list[int]) -> Model:
    """``body`` where parameters ``indices`` take a slice with the axis kept (size 1) and squeeze it."""
    params = body.get_parameters()
    for i, axis in zip(indices, axes, strict=False):
        old = params[i]
        ps = old.get_output_partial_shape(0)
        shape = PartialShape.dynamic() if ps.rank.is_dynamic else PartialShape(
            list(ps)[:axis] + [Dimension(1)] + list(ps)[axis:])
        new = Parameter(old.get_output_element_type(0), shape, name=old.friendly_name)
        new.output(0).set_names(old.output(0).get_names())
        squeezed = Squeeze(new, Constant(np.array([axis], np.int64)))
        old.output(0).replace(squeezed.output(0))
        params[i] = new
    return Model(body.get_results(), params, body.get_name())


def scan_iterator(body: Model, states: list[Output], scans: list[Output], captured: list[Output],
                  in_axes: list[int], in_dirs: list[int], out_axes: list[int], out_dirs: list[int]) -> list[Output]:
    """ONNX Scan (opset 9+ semantics) as a TensorIterator: ``body`` takes states, scan slices, captures."""
    n, m = len(states), len(scans)
    params = body.get_parameters()
    k = len(body.get_results()) - n
    in_axes = [_normalize(a, None if s.partial_shape.rank.is_dynamic else len(s.partial_shape), "scan_input_axes")
               for a, s in zip(in_axes, scans, strict=False)]
    out_ranks = [body.get_results()[n + j].get_output_partial_shape(0).rank for j in range(k)]
    out_axes = [_normalize(a, None if r.is_dynamic else r.get_length() + 1, "scan_output_axes")
                for a, r in zip(out_axes, out_ranks, strict=False)]
    body = _with_squeezed_parameters(body, list(range(n, n + m)), in_axes)
    body = _with_unsqueezed_results(body, list(range(n, n + k)), out_axes)
    ins: list[Any] = [MergedInputDescription(i, i, i) for i in range(n)]
    for j in range(m):
        forward = in_dirs[j] == 0
        ins.append(SliceInputDescription(n + j, n + j, 0 if forward else -1, 1 if forward else -1, 1,
                                         -1 if forward else 0, in_axes[j]))
    ins += [InvariantInputDescription(n + m + c, n + m + c) for c in range(len(captured))]
    outs: list[Any] = [BodyOutputDescription(i, i) for i in range(n)]
    for j in range(k):
        forward = out_dirs[j] == 0
        outs.append(ConcatOutputDescription(n + j, n + j, 0 if forward else -1, 1 if forward else -1, 1,
                                            -1 if forward else 0, out_axes[j]))
    if len(params) != n + m + len(captured):
        raise ValueError(f"the Scan body takes {len(params) - len(captured)} inputs, expected {n + m}")
    node = TensorIterator(*states, *scans, *captured, body=body, input_descriptions=tuple(ins),
                          output_descriptions=tuple(outs))
    return node.outputs()


def _drop_axis(ps: PartialShape, axis: int) -> PartialShape:
    if ps.rank.is_dynamic:
        return ps
    dims = list(ps)
    del dims[axis if axis >= 0 else axis + len(dims)]
    return PartialShape(dims)


@onnx_op("Scan", since=9)
def scan9(ctx):
    m = ctx.attr("num_scan_inputs")
    values = [ctx.input(i) for i in range(len(ctx.inputs))]
    n = len(values) - m
    states, scans = values[:n], values[n:]
    in_axes = ctx.attr("scan_input_axes", [0] * m)
    hints = [(v.element_type, v.partial_shape) for v in states]
    hints += [(v.element_type, _drop_axis(v.partial_shape, a)) for v, a in zip(scans, in_axes, strict=False)]
    sg = ctx.subgraph("body", hints)
    k = len(sg.model.get_results()) - n
    return scan_iterator(sg.model, states, scans, sg.captured, in_axes, ctx.attr("scan_input_directions", [0] * m),
                         ctx.attr("scan_output_axes", [0] * k), ctx.attr("scan_output_directions", [0] * k))


@onnx_op("Scan", since=8)
def scan8(ctx):
    """Scan-8 has a batch axis 0 (scan axis 1): an outer iterator over the batch runs a Scan-9 per item."""
    if ctx.has_input(0):
        raise ctx.unsupported("sequence_lens (per-batch sequence lengths) is not supported")
    m = ctx.attr("num_scan_inputs")
    values = [ctx.input(i) for i in range(1, len(ctx.inputs))]
    n = len(values) - m
    hints = [(v.element_type, _drop_axis(v.partial_shape, 0)) for v in values[:n]]
    hints += [(v.element_type, _drop_axis(_drop_axis(v.partial_shape, 0), 0)) for v in values[n:]]
    sg = ctx.subgraph("body", hints)
    k = len(sg.model.get_results()) - n
    items = [Parameter(v.element_type, _drop_axis(v.partial_shape, 0)) for v in values]
    caps = [Parameter(c.element_type, c.partial_shape) for c in sg.captured]
    inner = scan_iterator(sg.model, [p.output(0) for p in items[:n]], [p.output(0) for p in items[n:]],
                          [c.output(0) for c in caps], [0] * m, ctx.attr("directions", [0] * m), [0] * k, [0] * k)
    per_item = Model(inner, items + caps, f"{ctx.name}_batch_item")
    return scan_iterator(per_item, [], values, sg.captured, [0] * len(values), [0] * len(values),
                         [0] * (n + k), [0] * (n + k))
