"""The If kernel: each branch compiled once into its own CPU plan, with the outer constants inlined.

ONNX exporters pass a branch's weights in as body inputs (silero-vad's If on the sample rate carries
both models' weights), so the NumPy reference would run each branch unfused on parameters. This kernel
replaces every body Parameter fed by an outer Constant with that Constant, runs the CPU compile passes
(:func:`vinerun.plugins.cpu.plan.compile_passes`: folding, convolution/MatMul fusion) on a clone of the
body (its Parameters narrowed to the shapes the If's inputs have), and builds a
:class:`~vinerun.plugins.cpu.plan.Plan` for it; a call picks the branch and runs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError, VinerunError
from vinerun.ir.core_ops import Constant
from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel


def inline_constants(body: Model, descs: Any, node: Node) -> Model:
    """A clone of ``body`` where each Parameter fed by a Constant input of ``node`` reads that Constant.

    The Parameters stay in the body's list (so argument positions do not move), with no readers.
    """
    body = body.clone()
    params = body.get_parameters()
    for d in descs:
        value = node.const_input(d.input_index)
        if value is not None:
            param = params[d.body_parameter_index]
            param.output(0).replace(Constant(value, name=param.friendly_name).output(0))
    return body


def narrow_parameters(body: Model, descs: Any, node: Node) -> None:
    """Give each body Parameter fed by ``node``'s input the more precise of the two shapes (an outer model
    reshaped to static shapes makes its branches static), and re-infer the body's shapes."""
    params = body.get_parameters()
    for d in descs:
        param = params[d.body_parameter_index]
        merged = param.get_partial_shape().merge(node.get_input_partial_shape(d.input_index))
        if merged is not None:
            param.set_partial_shape(merged)
    body.validate_nodes_and_infer_types()


class _Branch:
    """One compiled branch: its plan, where its arguments come from and where its results go."""

    def __init__(self, node: Node, body: Model, inputs: Any, outputs: Any):
        from vinerun.plugins.cpu.plan import Plan, compile_passes  # the plan imports this package
        from vinerun.transformations import common_cleanup

        model = inline_constants(body, inputs, node)
        common_cleanup()(model)  # fold what the inlined constants settle (shape arithmetic) before re-inferring
        try:
            narrowed = model.clone()
            narrow_parameters(narrowed, inputs, node)
            common_cleanup()(narrowed)  # the shape arithmetic on now-static shapes (ShapeOf) folds too
            narrowed.validate_nodes_and_infer_types()
            model = narrowed
        except VinerunError:  # shapes this branch does not take (silero-vad's 8 kHz branch for 16 kHz input)
            pass
        compile_passes(model)
        self.plan = Plan(model)
        self.n_args = len(model.get_parameters())
        live = {k for k, _ in self.plan.live_inputs}  # not the inlined constants' Parameters
        self.args = [(d.body_parameter_index, d.input_index) for d in inputs if d.body_parameter_index in live]
        self.outs = [(d.output_index, d.body_value_index) for d in outputs]
        self.n_outs = node.get_output_size()

    def run(self, inputs: list) -> list:
        args: list[Any] = [None] * self.n_args
        for p, i in self.args:
            args[p] = inputs[i]
        values = self.plan.run(args)
        outs: list[Any] = [None] * self.n_outs
        for o, v in self.outs:
            outs[o] = values[v]
        return outs


@cpu_kernel("If")
def if_kernel(node: Any) -> Kernel | None:
    """Both branches compiled at compile time; the condition picks one per call."""
    then = _Branch(node, node.then_body, node.then_inputs, node.then_outputs)
    other = _Branch(node, node.else_body, node.else_inputs, node.else_outputs)

    def run(inputs: list) -> list:
        cond = np.asarray(inputs[0])
        if cond.size != 1:
            raise ValidationError("the condition must hold exactly one value")
        return (then if cond.reshape(-1)[0] else other).run(inputs)

    return Kernel(run, "plan_if")
