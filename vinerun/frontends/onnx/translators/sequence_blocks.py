"""ONNX RotaryEmbedding, SwiGLU, CausalConvWithState and LinearAttention -> vinerun ops of the same names."""

from __future__ import annotations

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops.gated import CausalConvWithState, SwiGLU
from vinerun.ops.linear_attention import LinearAttention
from vinerun.ops.rotary import RotaryEmbedding


def _inputs(ctx) -> list:
    return [ctx.optional_input(i) for i in range(len(ctx.inputs))]


@onnx_op("RotaryEmbedding", since=23)
def rotary_embedding(ctx):
    return RotaryEmbedding(*_inputs(ctx), interleaved=ctx.attr("interleaved", 0), num_heads=ctx.attr("num_heads", 0),
                           rotary_embedding_dim=ctx.attr("rotary_embedding_dim", 0)).output(0)


@onnx_op("SwiGLU", since=28)
def swiglu(ctx):
    return SwiGLU(ctx.input(0), ctx.input(1), alpha=ctx.attr("alpha", 1.0)).output(0)


@onnx_op("CausalConvWithState", since=27)
def causal_conv_with_state(ctx):
    return CausalConvWithState(*_inputs(ctx), activation=ctx.attr("activation", "none")).outputs()


@onnx_op("LinearAttention", since=27)
def linear_attention(ctx):
    attrs = {"kv_num_heads": ctx.attr("kv_num_heads"), "q_num_heads": ctx.attr("q_num_heads"),
             "scale": ctx.attr("scale", 0.0), "update_rule": ctx.attr("update_rule", "gated_delta"),
             "chunk_size": ctx.attr("chunk_size", 64)}
    return LinearAttention(*_inputs(ctx), **attrs).outputs()
