"""ONNX sequence and optional ops -> the ONNX-only ops of vinerun.ops.sequences / optional."""

from __future__ import annotations

from typing import Any

import onnx
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.optional import Optional, OptionalGetElement, OptionalHasElement
from vinerun.ops.sequences import (
    ConcatFromSequence,
    SequenceAt,
    SequenceConstruct,
    SequenceEmpty,
    SequenceErase,
    SequenceInsert,
    SequenceLength,
    SequenceMap,
    SplitToSequence,
)


def _present(ctx) -> list:
    return [v for v in ctx.inputs if v is not None]


@onnx_op("SequenceEmpty", since=11)
def sequence_empty(ctx):
    return SequenceEmpty(element_type=Type.from_onnx(ctx.attr("dtype", onnx.TensorProto.FLOAT))).output(0)


@onnx_op("SequenceConstruct", since=11)
def sequence_construct(ctx):
    return SequenceConstruct(*ctx.inputs).output(0)


@onnx_op("SequenceInsert", since=11)
def sequence_insert(ctx):
    return SequenceInsert(*_present(ctx)).output(0)


@onnx_op("SequenceAt", since=11)
def sequence_at(ctx):
    return SequenceAt(ctx.input(0), ctx.input(1)).output(0)


@onnx_op("SequenceErase", since=11)
def sequence_erase(ctx):
    return SequenceErase(*_present(ctx)).output(0)


@onnx_op("SequenceLength", since=11)
def sequence_length(ctx):
    return SequenceLength(ctx.input(0)).output(0)


@onnx_op("ConcatFromSequence", since=11)
def concat_from_sequence(ctx):
    return ConcatFromSequence(ctx.input(0), axis=ctx.attr("axis"), new_axis=bool(ctx.attr("new_axis", 0))).output(0)


@onnx_op("SplitToSequence", since=11)
def split_to_sequence(ctx):
    return SplitToSequence(*_present(ctx), axis=ctx.attr("axis", 0), keepdims=bool(ctx.attr("keepdims", 1))).output(0)


@onnx_op("SequenceMap", since=17)
def sequence_map(ctx):
    # A sequence's declared shape says nothing of its tensors: only the element type is a safe hint.
    hints: list[Any] = [(v.element_type, PartialShape.dynamic()) for v in ctx.inputs]
    sg = ctx.subgraph("body", hints)
    node = SequenceMap(*ctx.inputs, *sg.captured, body=sg.model, mapped_inputs=len(ctx.inputs))
    return node.outputs()


def _element_type(tp: onnx.TypeProto) -> Type:
    """The tensor element type inside an optional/sequence TypeProto (dynamic if unknown)."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type" and tp.tensor_type.elem_type:
        return Type.from_onnx(tp.tensor_type.elem_type)
    if kind == "sequence_type":
        return _element_type(tp.sequence_type.elem_type)
    if kind == "optional_type":
        return _element_type(tp.optional_type.elem_type)
    return Type.dynamic


@onnx_op("Optional", since=15)
def optional(ctx):
    if ctx.has_input(0):
        return Optional(ctx.input(0)).output(0)
    tp = ctx.attr("type", None)
    if tp is None:
        raise ctx.unsupported("an empty Optional needs the 'type' attribute")
    return Optional(element_type=_element_type(tp)).output(0)


@onnx_op("OptionalHasElement", since=15)
def optional_has_element(ctx):
    return OptionalHasElement(*_present(ctx)).output(0)


@onnx_op("OptionalGetElement", since=15)
def optional_get_element(ctx):
    return OptionalGetElement(ctx.input(0)).output(0)
