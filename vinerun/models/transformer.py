"""A transformer encoder stack: per layer, multi-head self-attention (MatMul, Reshape, Transpose,
Softmax), residual Add and LayerNorm (MVN * gamma + beta), then a GELU feed-forward block.

``transformer_model()`` builds it with the opset API; ``transformer_onnx()`` the same network as
ONNX (LayerNormalization, erf-based GELU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx

from vinerun import opset13 as ops
from vinerun.ir.model import Model
from vinerun.ir.node import Output
from vinerun.models._common import OnnxGraph, rng, small

EPS = 1e-5


@dataclass
class TransformerConfig:
    """Sizes of the encoder; ``batch``/``seq`` only fix the input shape of the built model."""

    batch: int = 1
    seq: int = 16
    d_model: int = 64
    heads: int = 4
    d_ff: int = 128
    layers: int = 2
    seed: int = 0


def transformer_weights(cfg: TransformerConfig) -> list[dict[str, np.ndarray]]:
    r = rng(cfg.seed)
    d, f = cfg.d_model, cfg.d_ff
    out = []
    for _ in range(cfg.layers):
        layer = {k: small(r, (d, d), 1 / math.sqrt(d)) for k in ("wq", "wk", "wv", "wo")}
        layer.update({k: small(r, (d,), 0.02) for k in ("bq", "bk", "bv", "bo", "beta1", "beta2")})
        layer.update(gamma1=1 + small(r, (d,), 0.05), gamma2=1 + small(r, (d,), 0.05))
        layer.update(w1=small(r, (d, f), 1 / math.sqrt(d)), b1=small(r, (f,), 0.02),
                     w2=small(r, (f, d), 1 / math.sqrt(f)), b2=small(r, (d,), 0.02))
        out.append(layer)
    return out


def _dense(x: Output, w: np.ndarray, b: np.ndarray, name: str) -> Output:
    y = ops.matmul(x, ops.constant(w, name=f"{name}.weight"), False, False, name=name)
    return ops.add(y, ops.constant(b, name=f"{name}.bias"), name=f"{name}.add").output(0)


def _layer_norm(x: Output, gamma: np.ndarray, beta: np.ndarray, name: str) -> Output:
    y = ops.mvn(x, ops.constant(np.array([-1], np.int64)), True, EPS, "inside_sqrt", name=name)
    y = ops.multiply(y, ops.constant(gamma, name=f"{name}.gamma"))
    return ops.add(y, ops.constant(beta, name=f"{name}.beta")).output(0)


def _heads(x: Output, cfg: TransformerConfig, name: str) -> Output:
    """[B, S, D] -> [B, H, S, D/H]."""
    dh = cfg.d_model // cfg.heads
    y = ops.reshape(x, ops.constant(np.array([0, 0, cfg.heads, dh], np.int64)), True, name=f"{name}.split")
    return ops.transpose(y, ops.constant(np.array([0, 2, 1, 3], np.int64)), name=f"{name}.heads").output(0)


def _encoder_layer(x: Output, w: dict[str, np.ndarray], cfg: TransformerConfig, i: int) -> Output:
    p = f"layer{i}"
    q = _heads(_dense(x, w["wq"], w["bq"], f"{p}.q"), cfg, f"{p}.q")
    k = _heads(_dense(x, w["wk"], w["bk"], f"{p}.k"), cfg, f"{p}.k")
    v = _heads(_dense(x, w["wv"], w["bv"], f"{p}.v"), cfg, f"{p}.v")
    scores = ops.matmul(q, k, False, True, name=f"{p}.scores")
    scale = np.array(1 / math.sqrt(cfg.d_model // cfg.heads), np.float32)
    probs = ops.softmax(ops.multiply(scores, ops.constant(scale)), -1, name=f"{p}.softmax")
    ctx = ops.matmul(probs, v, False, False, name=f"{p}.context")
    ctx = ops.transpose(ctx, ops.constant(np.array([0, 2, 1, 3], np.int64)))
    ctx = ops.reshape(ctx, ops.constant(np.array([0, 0, cfg.d_model], np.int64)), True, name=f"{p}.merge")
    x = _layer_norm(ops.add(x, _dense(ctx.output(0), w["wo"], w["bo"], f"{p}.out")).output(0),
                    w["gamma1"], w["beta1"], f"{p}.ln1")
    h = ops.gelu(_dense(x, w["w1"], w["b1"], f"{p}.ff1"), "erf", name=f"{p}.gelu")
    return _layer_norm(ops.add(x, _dense(h.output(0), w["w2"], w["b2"], f"{p}.ff2")).output(0),
                       w["gamma2"], w["beta2"], f"{p}.ln2")


def transformer_model(cfg: TransformerConfig | None = None) -> Model:
    """The encoder as a vinerun Model: ``tokens`` [batch, seq, d_model] -> ``hidden`` (same shape)."""
    cfg = cfg or TransformerConfig()
    x = ops.parameter([cfg.batch, cfg.seq, cfg.d_model], name="tokens").output(0)
    y = x
    for i, w in enumerate(transformer_weights(cfg)):
        y = _encoder_layer(y, w, cfg, i)
    y.set_names({"hidden"})
    return Model([y], [x.node], "transformer")


def transformer_onnx(cfg: TransformerConfig | None = None) -> onnx.ModelProto:
    """The same network as ONNX (opset 17)."""
    cfg = cfg or TransformerConfig()
    g = OnnxGraph()
    dh = cfg.d_model // cfg.heads

    def dense(x: str, w: np.ndarray, b: np.ndarray) -> str:
        return g.op("Add", g.op("MatMul", x, g.const(w, "w")), g.const(b, "b"))

    def heads(x: str) -> str:
        y = g.op("Reshape", x, g.const(np.array([0, 0, cfg.heads, dh], np.int64), "shape"))
        return g.op("Transpose", y, perm=[0, 2, 1, 3])

    def ln(x: str, gamma: np.ndarray, beta: np.ndarray) -> str:
        return g.op("LayerNormalization", x, g.const(gamma, "gamma"), g.const(beta, "beta"), axis=-1, epsilon=EPS)

    y = "tokens"
    for w in transformer_weights(cfg):
        q, k, v = (heads(dense(y, w[f"w{n}"], w[f"b{n}"])) for n in "qkv")
        scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2]))
        scores = g.op("Mul", scores, g.const(np.array(1 / math.sqrt(dh), np.float32), "scale"))
        ctx = g.op("Transpose", g.op("MatMul", g.op("Softmax", scores, axis=-1), v), perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", ctx, g.const(np.array([0, 0, cfg.d_model], np.int64), "shape"))
        y = ln(g.op("Add", y, dense(ctx, w["wo"], w["bo"])), w["gamma1"], w["beta1"])
        h = dense(y, w["w1"], w["b1"])
        erf = g.op("Erf", g.op("Div", h, g.const(np.array(math.sqrt(2), np.float32), "sqrt2")))
        h = g.op("Mul", g.op("Mul", h, g.const(np.array(0.5, np.float32), "half")),
                 g.op("Add", erf, g.const(np.array(1, np.float32), "one")))
        y = ln(g.op("Add", y, dense(h, w["w2"], w["b2"])), w["gamma2"], w["beta2"])
    shape = [cfg.batch, cfg.seq, cfg.d_model]
    return g.model("transformer", [("tokens", shape)], [("hidden", y, shape)])


def transformer_inputs(cfg: TransformerConfig | None = None, seed: int = 1) -> dict[str, np.ndarray]:
    cfg = cfg or TransformerConfig()
    return {"tokens": rng(seed).standard_normal((cfg.batch, cfg.seq, cfg.d_model)).astype(np.float32)}
