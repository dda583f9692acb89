"""Recurrent kernels on ATen's fused RNN/LSTM/GRU (``torch.lstm`` / ``torch.gru`` / ``torch.rnn_*``).

ATen covers the default activations, no clipping and no peepholes (partial ``sequence_lengths``
run one call per distinct length, on the entries of that length); its GRU applies the reset gate
after the recurrent matmul (``linear_before_reset``), so the ONNX/OpenVINO default GRU runs a
per-step loop of ATen ops instead (:func:`gru_reset_before`). Weights are reordered to ATen's gate
orders (LSTM ``i f g o``, GRU ``r z n``) once when they are constants. An f32 GRU with constant
weights runs on oneDNN's GRU primitive instead, either flavour, and an f32 LSTM with constant weights on oneDNN's
LSTM from hidden 256 on (:mod:`.rnn_dnnl`: GRU 3-4x faster at hidden 128, LSTM 2x at hidden 512); an f32 LSTM
whose batch the model fixes at 1 runs the repo's C step loop (:mod:`.lstm_steps`), faster than both at batch 1.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from vinerun.ir.node import Node
from vinerun.ops import _rnn_engine as eng
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel, lstm_steps
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch
from vinerun.plugins.cpu.kernels.rnn_dnnl import LSTM_MIN, SequenceCall, gru_sequence, lstm_sequence

_DEFAULTS = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"], "RNN": ["tanh"]}
# per family: ATen gate order, and the ONNX / OpenVINO orders of the same gates
_ATEN_ORDER = {"LSTM": "ifco", "GRU": "rzh", "RNN": "i"}
_ONNX_ORDER = {"LSTM": "iofc", "GRU": "zrh", "RNN": "i"}
_OV_ORDER = {"LSTM": "fico", "GRU": "zrh", "RNN": "i"}
_DNNL_ORDER = {"LSTM": "ifco", "GRU": "zrh"}

# (w_ih, w_hh, b_ih, b_hh) for one direction, from that direction's W, R, B in the source format
ParamFn = Callable[[np.ndarray, np.ndarray, np.ndarray | None], list[np.ndarray]]


def _reorder(a: np.ndarray, src: str, dst: str) -> np.ndarray:
    gates = eng.split_gates(a, src)
    return np.concatenate([gates[g] for g in dst], axis=0)


def _family(node: Node) -> str:
    return node.type_name.replace("Sequence", "")


def _onnx_params(family: str, hidden: int, dst: str | None = None) -> ParamFn:
    src, dst = _ONNX_ORDER[family], dst or _ATEN_ORDER[family]

    def params(W, R, B):
        n = len(src) * hidden
        wb, rb = (np.zeros(n, W.dtype), np.zeros(n, W.dtype)) if B is None else (B[:n], B[n:])
        return [_reorder(a, src, dst) for a in (W, R, wb, rb)]

    return params


def _ov_params(family: str, hidden: int, dst: str | None = None) -> ParamFn:
    src, dst = _OV_ORDER[family], dst or _ATEN_ORDER[family]

    def params(W, R, B):
        n = len(src) * hidden
        wb, rb = B[:n], np.zeros(n, B.dtype)
        if family == "GRU" and B.shape[0] == 4 * hidden:  # B = [z, r, Wb_h, Rb_h] with linear_before_reset
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
    if node.type_name == "LSTM" and node.has_input(7):  # peepholes
        return False
    return all(o is None or o.element_type.get_type_name() in ("f32", "f64", "bf16") for o in node.input_values()[:1])


def _positions(onnx: bool, n_states: int) -> tuple[int, int, int, int, int]:
    """Input positions of (W, R, B, sequence lengths, first initial state): ONNX's or OpenVINO's order."""
    if onnx:
        return 1, 2, 3, 4, 5
    return 2 + n_states, 3 + n_states, 4 + n_states, 1 + n_states, 1


def lstm_weight_inputs(node: Node) -> tuple[int, int, int]:
    """The input positions of W, R and B of an ONNX LSTM or an OpenVINO LSTMSequence."""
    return _positions(node.version == "onnx", 2)[:3]


def _constant_weights(node: Node, iw: int, ir: int, ib: int) -> bool:
    """W and R are constants, and so is B where the node has one."""
    return (node.const_input(iw) is not None and node.const_input(ir) is not None
            and (not node.has_input(ib) or node.const_input(ib) is not None))


def runs_lstm_on_dnnl(node: Node) -> bool:
    """An LSTM this kernel runs on oneDNN's LSTM primitive (f32 or bf16 data): default activations, constant
    weights, hidden size from :data:`LSTM_MIN` on, and the oneDNN binding present. The CPU's bf16 lowering takes
    such LSTMs as anchors (oneDNN's bf16 LSTM keeps its weights in bf16, as openvino's)."""
    if node.type_name not in ("LSTM", "LSTMSequence") or library() is None:
        return False
    if not _supported(node, "LSTM") or node.get_attributes()["hidden_size"] < LSTM_MIN:
        return False
    return _constant_weights(node, *lstm_weight_inputs(node))


def gru_reset_before(x: torch.Tensor, hx: torch.Tensor, params: list[torch.Tensor], has_biases: bool,
                     num_layers: int, dropout: float, train: bool, bidirectional: bool,
                     batch_first: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.gru``'s signature and layouts, with the reset gate applied before the recurrent matmul:
    ``n = tanh(W_n x + b_in + R_n (r * h) + b_hn)`` (one layer, biases given)."""
    xs = x if batch_first else x.transpose(0, 1)  # [batch, seq, input]
    batch, seq = xs.shape[:2]
    ys, finals = [], []
    for d in range(2 if bidirectional else 1):
        w_ih, w_hh, b_ih, b_hh = params[4 * d:4 * d + 4]
        hid = w_hh.shape[1]
        gx = F.linear(xs, w_ih, b_ih)  # all input projections at once: [batch, seq, 3H] (r, z, n)
        w_rz, w_n, b_rz, b_n = w_hh[:2 * hid], w_hh[2 * hid:], b_hh[:2 * hid], b_hh[2 * hid:]
        h = hx[d]
        out = x.new_empty((batch, seq, hid))
        for t in (range(seq - 1, -1, -1) if d == 1 else range(seq)):
            g = gx[:, t]
            rz = torch.sigmoid(g[:, :2 * hid] + F.linear(h, w_rz, b_rz))
            r, z = rz[:, :hid], rz[:, hid:]
            n = torch.tanh(g[:, 2 * hid:] + F.linear(r * h, w_n, b_n))
            h = n + z * (h - n)
            out[:, t] = h
        ys.append(out)
        finals.append(h)
    y = torch.cat(ys, dim=-1)
    return (y if batch_first else y.transpose(0, 1)), torch.stack(finals)


def _aten(family: str, relu: bool, linear_before_reset: bool) -> Callable:
    if family == "LSTM":
        return torch.lstm
    if family == "GRU":
        return torch.gru if linear_before_reset else gru_reset_before
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
    aten = _aten(family, relu, bool(a.get("linear_before_reset")))
    n_states = 2 if family == "LSTM" else 1
    make = _onnx_params(family, hidden) if onnx else _ov_params(family, hidden)
    iw, ir, ib, il, ih = _positions(onnx, n_states)
    batch_first = not onnx or a.get("layout", 0) == 1
    cached: list[torch.Tensor] | None = None
    cast: dict[torch.dtype, list[torch.Tensor]] = {}
    consts = [node.const_input(i) for i in (iw, ir, ib)]
    fast: SequenceCall | None = None  # the C step loop or oneDNN's primitive, where one takes the node
    fast_name = ""
    if _constant_weights(node, iw, ir, ib):
        cached = _flat_params(make, *consts, nd)
        data_type = node.get_input_element_type(0).get_type_name()
        direction = 3 if bidir else 2 if reverse_only else 1
        to_dnnl = (_onnx_params if onnx else _ov_params)(family, hidden, _DNNL_ORDER.get(family, "i"))
        if family == "LSTM" and data_type == "f32" and _static_batch(node, onnx) == 1 and lstm_steps.available():
            fast, fast_name = lstm_steps.lstm_batch1(*_stacked(consts, nd, to_dnnl), direction), "gemv_lstm"
        elif (family == "GRU" and data_type == "f32") or (family == "LSTM" and data_type in ("f32", "bf16")
                                                           and hidden >= LSTM_MIN):
            fast = _dnnl_sequence(family, consts, nd, to_dnnl, direction, bool(a.get("linear_before_reset")))
            fast_name = f"onednn_{family.lower()}"

    def call(xb: torch.Tensor, states: list[torch.Tensor], params: list[torch.Tensor]):
        """One C, oneDNN or ATen call on batch-major ``xb``: Y [batch, seq, dirs*H] and the final states."""
        if fast is not None and (out := fast(xb, states)) is not None:
            return out
        xb = xb.flip(1) if reverse_only else xb
        hx = tuple(states) if family == "LSTM" else states[0]
        out = aten(xb, hx, params, True, 1, 0.0, False, bidir, True)
        return (out[0].flip(1) if reverse_only else out[0]), list(out[1:])

    def run(inputs):
        inputs = list(inputs) + [None] * (8 - len(inputs))
        xb = to_torch(inputs[0]) if batch_first else to_torch(inputs[0]).transpose(0, 1)
        batch, seq = xb.shape[:2]
        if cached is None:
            params = [p.to(xb.dtype) for p in _flat_params(make, inputs[iw], inputs[ir], inputs[ib], nd)]
        else:  # constant weights in the data's type, converted once per type (not per call: 0.9 ms at hidden 512)
            params = cast.get(xb.dtype) or cast.setdefault(xb.dtype, [p.to(xb.dtype) for p in cached])
        states = [_initial(inputs[ih + k], onnx, a.get("layout", 0), (nd, batch, hidden), xb.dtype)
                  for k in range(n_states)]
        lens = None if inputs[il] is None else np.minimum(np.asarray(inputs[il]).astype(np.int64), seq)
        if lens is None or np.all(lens == seq):
            y, finals = call(xb, states, params)
        else:  # one call per distinct length, on the entries of that length cut to it
            y, finals = xb.new_zeros((batch, seq, nd * hidden)), [st.clone() for st in states]
            for length in np.unique(lens[lens > 0]):
                idx = torch.from_numpy(np.nonzero(lens == length)[0])
                y_part, f_part = call(xb[idx, :length], [st[:, idx] for st in states], params)
                y[idx, :length] = y_part
                for k in range(n_states):
                    finals[k][:, idx] = f_part[k]
        return _outputs(y, finals, onnx, a.get("layout", 0), nd, hidden)

    name = "aten_gru_loop" if aten is gru_reset_before else f"aten_{family.lower()}"
    return Kernel(run, fast_name if fast is not None else name)


def _static_batch(node: Node, onnx: bool) -> int | None:
    """The batch size of X when the model fixes it (ONNX layout 0: [seq, batch, I]; else [batch, seq, I])."""
    x = node.get_input_partial_shape(0)
    axis = 1 if onnx and node.get_attributes().get("layout", 0) == 0 else 0
    if not x.rank.is_static or x.rank.get_length() != 3 or not x[axis].is_static:
        return None
    return x[axis].get_length()


def _stacked(consts: list, nd: int, make: ParamFn) -> list[np.ndarray]:
    """``w``, ``r``, ``wb``, ``rb`` of all directions, stacked, in ``make``'s gate order, f32."""
    W, R, B = consts
    per_dir = [make(W[d], R[d], None if B is None else B[d]) for d in range(nd)]
    return [np.stack([p[k] for p in per_dir]).astype(np.float32) for k in range(4)]


def _dnnl_sequence(family: str, consts: list, nd: int, make: ParamFn, direction: int,
                   lbr: bool) -> SequenceCall | None:
    """oneDNN's GRU or LSTM on the constant weights (in :data:`_DNNL_ORDER`), or None without the library."""
    lib = library()
    if lib is None:
        return None
    w, r, wb, rb = _stacked(consts, nd, make)
    if family == "LSTM":
        return lstm_sequence(lib, w, r, wb, rb, direction)
    return gru_sequence(lib, w, r, wb, rb, direction, lbr)


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
    """Y [batch, seq, dirs*H] and states [dirs, batch, H] in the op's output layouts."""
    Y = y.reshape(y.shape[0], y.shape[1], nd, hidden)  # ONNX layout 1: [batch, seq, dirs, H]
    if onnx and layout == 0:
        Y = Y.permute(1, 2, 0, 3)  # [seq, dirs, batch, H]
    elif not onnx:
        Y = Y.permute(0, 2, 1, 3)  # [batch, dirs, seq, H]
    outs = [to_numpy(Y.contiguous())]
    for f in finals:  # [dirs, batch, H]
        outs.append(to_numpy(f.contiguous() if onnx and layout == 0 else f.transpose(0, 1).contiguous()))
    return outs
