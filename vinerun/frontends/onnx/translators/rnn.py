"""ONNX RNN, GRU and LSTM -> vinerun's ONNX-semantics recurrent ops (``vinerun.ops.rnn_onnx``)."""

from __future__ import annotations

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops.rnn_onnx import OnnxGRU, OnnxLSTM, OnnxRNN


def _recurrent(ctx, cls: type, n_inputs: int, extra: tuple[str, ...]) -> list:
    attrs = {"hidden_size": ctx.attr("hidden_size"), "direction": ctx.attr("direction", "forward"),
             "activations": ctx.attr("activations", []), "activation_alpha": ctx.attr("activation_alpha", []),
             "activation_beta": ctx.attr("activation_beta", []), "clip": ctx.attr("clip", 0.0),
             "layout": ctx.attr("layout", 0)}
    for name in extra:
        if ctx.has_attr(name):
            attrs[name] = ctx.attr(name)
    inputs = [ctx.optional_input(i) for i in range(min(len(ctx.inputs), n_inputs))]
    node = cls(*inputs, **attrs)
    return [node.output(i) for i in range(node.get_output_size())]


@onnx_op("RNN", since=1)
def rnn(ctx):
    return _recurrent(ctx, OnnxRNN, 6, ())


@onnx_op("GRU", since=1)
def gru(ctx):
    return _recurrent(ctx, OnnxGRU, 6, ("linear_before_reset",))


@onnx_op("LSTM", since=1)
def lstm(ctx):
    return _recurrent(ctx, OnnxLSTM, 8, ("input_forget",))
