"""ONNX RNN, GRU and LSTM -> OpenVINO's RNNSequence / GRUSequence / LSTMSequence (opset5).

As OpenVINO's own ONNX frontend does: X and the states are transposed to batch-major layouts,
gates are reordered (LSTM ``iofc`` -> ``fico``), the input and recurrent biases are summed (GRU with
``linear_before_reset`` keeps the hidden gate's recurrent bias as a fourth block), and absent
optional inputs become zeros / full lengths. Constant weights are rearranged here, once; weights
that are graph inputs go through Split/Add/Concat. So an ONNX LSTM saved as IR runs in openvino.

Nodes opset5 cannot express (peepholes, ``input_forget``, activations other than
sigmoid/tanh/relu, or different activations per direction) keep ONNX semantics through
``vinerun.ops.rnn_onnx``.
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops import _rnn_engine as eng
from vinerun.ops.arithmetic import Add
from vinerun.ops.broadcast import Broadcast
from vinerun.ops.concat_split import Concat, Split
from vinerun.ops.gather import Gather
from vinerun.ops.rnn import GRUSequence, LSTMSequence, RNNSequence
from vinerun.ops.rnn_onnx import OnnxGRU, OnnxLSTM, OnnxRNN
from vinerun.ops.shape_of import ShapeOf
from vinerun.ops.transpose import Transpose

# family -> (ONNX op class, OpenVINO op class, ONNX gate order, OpenVINO gate order, default activations)
_FAMILIES = {
    "RNN": (OnnxRNN, RNNSequence, "i", "i", ["tanh"]),
    "GRU": (OnnxGRU, GRUSequence, "zrh", "zrh", ["sigmoid", "tanh"]),
    "LSTM": (OnnxLSTM, LSTMSequence, "iofc", "fico", ["sigmoid", "tanh", "tanh"]),
}
_OV_ACTIVATIONS = {"sigmoid", "tanh", "relu"}


def _attrs(ctx) -> dict:
    return {"hidden_size": ctx.attr("hidden_size"), "direction": ctx.attr("direction", "forward"),
            "activations": ctx.attr("activations", []), "activation_alpha": ctx.attr("activation_alpha", []),
            "activation_beta": ctx.attr("activation_beta", []), "clip": ctx.attr("clip", 0.0),
            "layout": ctx.attr("layout", 0)}


def _ov_activations(ctx, family: str, nd: int) -> list[str] | None:
    """The one activation list opset5 takes, or None when the node's cannot be expressed."""
    default = _FAMILIES[family][4]
    acts = [a.lower() for a in ctx.attr("activations", [])] or default
    k = len(default)
    if len(acts) == k * nd and acts[:k] != acts[k:] and nd == 2:
        return None
    acts = acts[:k]
    return acts if len(acts) == k and set(acts) <= _OV_ACTIVATIONS else None


def _transpose(x: Output, perm: list[int]) -> Output:
    return Transpose(x, Constant(np.array(perm, np.int64))).output(0)


def _rearrange(pieces: list, family: str, lbr: bool, hidden_bias: bool, add, cat):
    """Weights or biases in OpenVINO order from per-gate ``pieces`` in ONNX order.

    For biases, ``pieces`` holds the input biases then the recurrent ones; they are summed per gate,
    except the GRU hidden gate's recurrent bias under ``linear_before_reset`` (appended last).
    """
    src, dst = _FAMILIES[family][2], _FAMILIES[family][3]
    g = len(src)
    if not hidden_bias:
        return cat([pieces[src.index(c)] for c in dst])
    summed = [add(pieces[src.index(c)], pieces[g + src.index(c)]) for c in dst]
    if family == "GRU" and lbr:
        summed[dst.index("h")] = pieces[src.index("h")]
        summed.append(pieces[g + src.index("h")])
    return cat(summed)


def _weights(ctx, i: int, family: str, lbr: bool, is_bias: bool) -> Output:
    g = len(_FAMILIES[family][2])
    n = 2 * g if is_bias else g
    value = ctx.const_value(i)
    if value is not None:
        pieces = np.split(value, n, axis=1)
        arr = _rearrange(pieces, family, lbr, is_bias, np.add, lambda p: np.concatenate(p, axis=1))
        return Constant(np.ascontiguousarray(arr)).output(0)
    split = Split(ctx.input(i), Constant(np.array(1, np.int64)), num_splits=n)
    pieces = split.outputs()
    return _rearrange(pieces, family, lbr, is_bias, lambda a, b: Add(a, b).output(0),
                      lambda p: Concat(p, axis=1).output(0))


def _sequence(ctx, family: str):
    onnx_cls, ov_cls, src, _, _ = _FAMILIES[family]
    attrs = _attrs(ctx)
    nd = len(eng.directions(attrs["direction"]))
    lbr = bool(ctx.attr("linear_before_reset", 0))
    acts = _ov_activations(ctx, family, nd)
    if acts is None or ctx.attr("input_forget", 0) or ctx.has_input(7) or ctx.input(0).element_type.is_dynamic():
        extra = {k: ctx.attr(k) for k in ("linear_before_reset", "input_forget") if ctx.has_attr(k)}
        n_in = 8 if family == "LSTM" else 6
        node = onnx_cls(*[ctx.optional_input(i) for i in range(min(len(ctx.inputs), n_in))], **attrs, **extra)
        return node.outputs()
    hidden, layout = attrs["hidden_size"], attrs["layout"]
    x = ctx.input(0) if layout == 1 else _transpose(ctx.input(0), [1, 0, 2])
    et = x.element_type
    W, R = _weights(ctx, 1, family, lbr, False), _weights(ctx, 2, family, lbr, False)
    if ctx.has_input(3):
        B = _weights(ctx, 3, family, lbr, True)
    else:
        nb = (len(src) + (1 if family == "GRU" and lbr else 0)) * hidden
        B = Constant(np.zeros((nd, nb), et.to_dtype())).output(0)
    shape = ShapeOf(x, output_type=Type.i64).output(0)
    batch = Gather(shape, Constant(np.array([0], np.int64)), Constant(np.array(0, np.int64))).output(0)
    if ctx.has_input(4):
        lens = ctx.input(4)
    else:
        seq = Gather(shape, Constant(np.array(1, np.int64)), Constant(np.array(0, np.int64))).output(0)
        lens = Broadcast(seq, batch).output(0)
    n_states = 2 if family == "LSTM" else 1
    states = []
    for k in range(n_states):
        if ctx.has_input(5 + k):
            s = ctx.input(5 + k)
            states.append(s if layout == 1 else _transpose(s, [1, 0, 2]))
        else:
            target = Concat([batch, Constant(np.array([nd, hidden], np.int64)).output(0)], axis=0).output(0)
            states.append(Broadcast(Constant(np.zeros((), et.to_dtype())), target).output(0))
    ov_attrs = {"hidden_size": hidden, "direction": attrs["direction"].lower(), "activations": acts,
                "activations_alpha": attrs["activation_alpha"], "activations_beta": attrs["activation_beta"],
                "clip": attrs["clip"]}
    if family == "GRU":
        ov_attrs["linear_before_reset"] = lbr
    node = ov_cls(x, *states, lens, W, R, B, **ov_attrs)
    y = _transpose(node.output(0), [2, 1, 0, 3] if layout == 0 else [0, 2, 1, 3])
    finals = [node.output(1 + k) if layout == 1 else _transpose(node.output(1 + k), [1, 0, 2])
              for k in range(n_states)]
    return [y, *finals]


@onnx_op("RNN", since=1)
def rnn(ctx):
    return _sequence(ctx, "RNN")


@onnx_op("GRU", since=1)
def gru(ctx):
    return _sequence(ctx, "GRU")


@onnx_op("LSTM", since=1)
def lstm(ctx):
    return _sequence(ctx, "LSTM")
