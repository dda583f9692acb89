"""Recurrent kernels on ATen's fused RNN/LSTM/GRU (``torch.lstm`` / ``torch.gru`` / ``torch.rnn_*``).

ATen covers the default activations, no clipping, no peepholes, and (for GRU) only
``linear_before_reset``; weights are reordered to ATen's gate orders (LSTM ``i f g o``, GRU
``r z n``) once when they are constants. Calls whose ``sequence_lengths`` are not all full
run the node's reference (ATen has no per-entry lengths without packing).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.ops import _rnn_engine as eng
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch

_DEFAULTS = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"], "RNN": ["tanh"]}
# per family: ATen gate order, and the ONNX / OpenVINO orders of the same gates
_ATEN_ORDER = {"LSTM": "ifco", "GRU": "rzh", "RNN": "i"}
_ONNX_ORDER = {"LSTM": "iofc", "GRU": "zrh", "RNN": "i"}
_OV_ORDER = {"LSTM": "fico", "GRU": "zrh", "RNN": "i"}

# (w_ih, w_hh, b_ih, b_hh) for one direction, from that direction's W, R, B in the source format
ParamFn = Callable[[np.ndarray, np.ndarray, np.ndarray | None], list[np.ndarray]]


def _reorder(a: np.ndarray, src: str, dst: str) -> np.ndarray:
    gates = eng.split_gates(a, src)
    return np.concatenate([gates[g] for g in dst], axis=0)


def _family(node: Node) -> str:
    return node.type_name.replace("Sequence", "")


def _onnx_params(family: str, hidden: int) -> ParamFn:
    src, dst = _ONNX_ORDER[family], _ATEN_ORDER[family]

    def params(W, R, B):
        n = len(src) * hidden
        wb, rb = (np.zeros(n, W.dtype), np.zeros(n, W.dtype)) if B is None else (B[:n], B[n:])
        return [_reorder(a, src, dst) for a in (W, R, wb, rb)]

    return params


def _ov_params(family: str, hidden: int) -> ParamFn:
    src, dst = _OV_ORDER[family], _ATEN_ORDER[family]

    def params(W, R, B):
        n = len(src) * hidden
        wb, rb = B[:n], np.zeros(n, B.dtype)
        if family == "GRU":  # B = [z, r, Wb_h, Rb_h] with linear_before_reset
            rb = np.concatenate([np.zeros(2 * hidden, B.dtype), B[3 * hidden:]])
        return [_reorder(a, src, dst) for a in (W, R, wb, rb)]

    return params


def _supported(node: Node, family: str) -> bool:
    a = node.get_attributes()
    acts = [s.lower() for s in (a.get("activations") or [])]
    nd = len(eng.directions(a["direction"]))
    default = _DEFAULTS[family]
    acts_ok = not acts or acts in (default, default * nd) or (family == "RNN" and acts in (["relu"], ["relu"] * nd))
    if not acts_ok or a.get("clip") or a.get("input_forget"):
        return False
    if family == "GRU" and not a.get("linear_before_reset"):
        return False
    if node.type_name == "LSTM" and node.has_input(7):  # peepholes
        return False
    return all(o is None or o.element_type.get_type_name() in ("f32", "f64") for o in node.input_values()[:1])


def _aten(family: str, relu: bool) -> Callable:
    if family == "LSTM":
        return torch.lstm
    if family == "GRU":
        return torch.gru
    return torch.rnn_relu if relu else torch.rnn_tanh


@cpu_kernel("LSTM", "GRU", "RNN", "LSTMSequence", "GRUSequence", "RNNSequence")
def recurrent(node: Node) -> Kernel | None:
    onnx = node.version == "onnx"
    family = node.type_name if onnx else _family(node)
    if not _supported(node, family):
        return None
    a = node.get_attributes()
    hidden, nd = a["hidden_size"], len(eng.directions(a["direction"]))
    bidir = nd == 2
    reverse_only = eng.directions(a["direction"]) == [True]
    relu = bool(a.get("activations")) and a["activations"][0].lower() == "relu"
    aten = _aten(family, relu)
    n_states = 2 if family == "LSTM" else 1
    make = _onnx_params(family, hidden) if onnx else _ov_params(family, hidden)
    # input positions: (W, R, B, sequence lengths, first initial state)
    if onnx:
        iw, ir, ib, il, ih = 1, 2, 3, 4, 5
    else:
        il, ih = 1 + n_states, 1
        iw, ir, ib = il + 1, il + 2, il + 3
    batch_first = not onnx or a.get("layout", 0) == 1
    cached: list[torch.Tensor] | None = None
    consts = [node.const_input(i) for i in (iw, ir, ib)]
    if all(c is not None for c in consts[:2]) and (consts[2] is not None or not node.has_input(ib)):
        cached = _flat_params(make, *consts, nd)

    def run(inputs):
        inputs = list(inputs) + [None] * (8 - len(inputs))
        x = inputs[0]
        seq = x.shape[1] if batch_first else x.shape[0]
        batch = x.shape[0] if batch_first else x.shape[1]
        lens = inputs[il]
        if lens is not None and np.any(np.asarray(lens) != seq):
            return node.evaluate(inputs[:node.get_input_size()])
        params = cached if cached is not None else _flat_params(make, inputs[iw], inputs[ir], inputs[ib], nd)
        params = [p.to(to_torch(x).dtype) for p in params]
        states = [_initial(inputs[ih + k], onnx, a.get("layout", 0), (nd, batch, hidden), params[0].dtype)
                  for k in range(n_states)]
        hx = tuple(states) if family == "LSTM" else states[0]
        time_axis = 1 if batch_first else 0
        xt = to_torch(x).flip(time_axis) if reverse_only else to_torch(x)
        out = aten(xt, hx, params, True, 1, 0.0, False, bidir, batch_first)
        y, finals = (out[0].flip(time_axis) if reverse_only else out[0]), out[1:]
        return _outputs(y, finals, onnx, a.get("layout", 0), nd, hidden)

    return Kernel(run, f"aten_{family.lower()}")


def _flat_params(make: ParamFn, W, R, B, nd: int) -> list[torch.Tensor]:
    flat = []
    for d in range(nd):
        flat += [torch.from_numpy(np.ascontiguousarray(p)) for p in make(W[d], R[d], None if B is None else B[d])]
    return flat


def _initial(s, onnx: bool, layout: int, shape: tuple[int, int, int], dtype: torch.dtype) -> torch.Tensor:
    """An initial state as ATen wants it: [dirs, batch, hidden]."""
    if s is None:
        return torch.zeros(shape, dtype=dtype)
    t = to_torch(np.asarray(s))
    return t.transpose(0, 1).contiguous() if (not onnx or layout == 1) else t


def _outputs(y: torch.Tensor, finals, onnx: bool, layout: int, nd: int, hidden: int) -> list[np.ndarray]:
    if onnx and layout == 0:  # y [seq, batch, dirs*H] -> [seq, dirs, batch, H]
        Y = y.reshape(y.shape[0], y.shape[1], nd, hidden).permute(0, 2, 1, 3)
    elif onnx:  # [batch, seq, dirs*H] -> [batch, seq, dirs, H]
        Y = y.reshape(y.shape[0], y.shape[1], nd, hidden)
    else:  # -> [batch, dirs, seq, H]
        Y = y.reshape(y.shape[0], y.shape[1], nd, hidden).permute(0, 2, 1, 3)
    outs = [to_numpy(Y.contiguous())]
    for f in finals:  # [dirs, batch, H]
        outs.append(to_numpy(f.contiguous() if onnx and layout == 0 else f.transpose(0, 1).contiguous()))
    return outs
