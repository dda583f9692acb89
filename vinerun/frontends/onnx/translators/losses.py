"""ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, each one op."""

from __future__ import annotations

from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.node import Output
from vinerun.ops.losses import NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss


def _loss_inputs(ctx: NodeContext) -> list[Output]:
    inputs = [ctx.input(0), ctx.input(1)]
    weight = ctx.optional_input(2)
    return inputs + ([weight] if weight is not None else [])


def _loss_attrs(ctx: NodeContext) -> dict:
    return {"reduction": ctx.attr("reduction", "mean"), "ignore_index": ctx.attr("ignore_index", None)}


@onnx_op("NegativeLogLikelihoodLoss", since=12)
def nll_loss(ctx: NodeContext) -> Output:
    return NegativeLogLikelihoodLoss(_loss_inputs(ctx), **_loss_attrs(ctx)).output(0)


@onnx_op("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(ctx: NodeContext) -> list[Output | None]:
    node = SoftmaxCrossEntropyLoss(_loss_inputs(ctx), **_loss_attrs(ctx))
    return [node.output(0), node.output(1) if ctx.output_used(1) else None]
