"""ONNX Attention (opsets 23-25) -> vinerun's Attention op."""

from __future__ import annotations

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops.attention import Attention
from vinerun.ops.flex_attention import FlexAttention

_ATTRS = {"is_causal": 0, "kv_num_heads": 0, "q_num_heads": 0, "qk_matmul_output_mode": 0, "softcap": 0.0,
          "softmax_precision": 0, "left_window_size": -1, "right_window_size": -1}


@onnx_op("Attention", since=23)
def attention(ctx):
    attrs = {k: ctx.attr(k, d) for k, d in _ATTRS.items()}
    if ctx.has_attr("scale"):
        attrs["scale"] = ctx.attr("scale")
    node = Attention(*[ctx.optional_input(i) for i in range(len(ctx.inputs))], **attrs)
    return node.outputs()


@onnx_op("FlexAttention", domain="ai.onnx.preview", since=1)
def flex_attention(ctx):
    attrs = {"softmax_precision": ctx.attr("softmax_precision", 0)}
    if ctx.has_attr("scale"):
        attrs["scale"] = ctx.attr("scale")
    captures: dict[str, list] = {"score_mod": [], "prob_mod": []}
    for name in captures:
        if ctx.has_attr(name):
            body = ctx.subgraph(name)
            attrs[name] = body.model
            captures[name] = body.captured
    node = FlexAttention(ctx.input(0), ctx.input(1), ctx.input(2), *captures["score_mod"], *captures["prob_mod"],
                         score_mod_captures=len(captures["score_mod"]), **attrs)
    return node.output(0)
