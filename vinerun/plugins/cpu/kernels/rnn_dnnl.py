"""A whole GRU or LSTM sequence (f32, default activations, no clip) in one call of oneDNN's RNN primitive.

ATen's ``torch.gru`` dispatches some ten small ops per time step (~11 us a step at hidden 128, batch 1, on the
2-core CPUs measured), where oneDNN's GRU primitive (``brgemm``, as OpenVINO's CPU plugin runs it) does the input
projections of all steps as one GEMM and each step as one small GEMM with a fused gate epilogue (~4-5 us).
oneDNN has both GRU flavours: ``gru`` (the reset gate before the recurrent product, ONNX's default) and
``lbr_gru`` (``linear_before_reset``, what torch exports); its gate order (u, r, o) is ONNX's and OpenVINO's
(z, r, h), so only the layouts change: weights to ``ldigo`` once, the biases summed where oneDNN has one.

oneDNN names its GRU implementation ``ref`` (its ``brgemm`` RNN takes LSTM and vanilla RNN only here), but it is
not the naive one that name means for other primitives: GEMMs and a JIT cell epilogue. Measured (2-core EPYC,
hidden 128, input 257, 101 steps, batch 1): 0.30 ms at 1 thread, 0.42 at 2, ``torch.gru`` 1.2; openvino's own GRU
0.45-0.54. A step of a few rows is too small to share: below :data:`SMALL` (batch x hidden) it runs on one
thread (hidden 512 at batch 4: 4.4 ms at 1 thread, 6.5 at 2; at batch 16, 10.8 and 5.6).

LSTM (gate order i, f, c, o; one bias per gate) runs on oneDNN's ``brgemm`` LSTM with the weights reordered to
its layout once; ``torch.lstm`` reorders them on every call. ddddocr's bidirectional LSTM (input and hidden 512,
25 steps, batch 1; 2-core Xeon, 2 threads): 2.8 ms, 4.6 in ``torch.lstm``; in bf16 (the CPU's bf16 lowering
takes such LSTMs as anchors, as openvino runs them) 1.6 ms. Small LSTMs stay on ATen (:data:`LSTM_MIN`).

A primitive is made per (sequence length, batch, source layout) on first use (at most :data:`SHAPES` of them;
other shapes keep the ATen path); the source and destination are ``[seq, batch, C]`` (``tnc``) or
``[batch, seq, C]`` (``ntc``) in place, whichever the input already is.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable

import numpy as np
import torch

from vinerun.plugins.cpu.kernels._dnnl import (
    _FWD_INFERENCE,
    BF16,
    F32,
    DnnlError,
    Library,
)
from vinerun.plugins.cpu.kernels._dnnl_ops import dense
from vinerun.plugins.cpu.kernels.lstm_cell import RnnPrimitive
from vinerun.plugins.cpu.thread_governor import omp_threads

#: distinct (sequence length, batch, layout) shapes a kernel makes primitives for
SHAPES = 8
#: hidden size below which an LSTM stays on ATen: oneDNN's LSTM wins from here on (hidden 512, batch 1: 2.7 ms
#: against 5.2 over 25 bidirectional steps; hidden 256, batch 4: 1.35 against 1.53), ATen below (hidden 64-128 at
#: batch 1: 0.31-0.42 ms against 0.35-0.53 over 100-200 steps; 2-core Xeon, 2 threads)
LSTM_MIN = 256
#: batch x hidden below which a GRU call runs on one thread (oneDNN's LSTM gains from a second thread even at
#: batch 1, hidden 128: 0.56 -> 0.42 ms over 100 steps on 2 cores)
SMALL = 2048
# oneDNN arguments (dnnl_types.h) and directions (dnnl_rnn_direction_t, oneDNN 3.x: 0 is undef)
_SRC_LAYER, _SRC_ITER, _SRC_ITER_C, _DST_LAYER, _DST_ITER, _DST_ITER_C = 1, 2, 3, 17, 18, 19
_LEFT_TO_RIGHT, _RIGHT_TO_LEFT, _BIDIRECTIONAL_CONCAT = 1, 2, 3
#: the data types the primitives take (oneDNN's bf16 RNN keeps the bias f32)
_DTYPES = {torch.float32: F32, torch.bfloat16: BF16}


def dnnl_bias(wb: np.ndarray, rb: np.ndarray, linear_before_reset: bool) -> np.ndarray:
    """oneDNN's bias of one direction from the input and recurrent biases ``[3H]`` (gate order z, r, h):
    ``[3, H]`` (each gate's sum), or ``[4, H]`` with ``linear_before_reset`` (z and r summed, then the
    input and the recurrent bias of h apart: the latter is added inside the reset product)."""
    wb3, rb3 = wb.reshape(3, -1), rb.reshape(3, -1)
    if not linear_before_reset:
        return wb3 + rb3
    return np.concatenate([wb3[:2] + rb3[:2], wb3[2:], rb3[2:]])


class SequencePrimitive(RnnPrimitive):
    """oneDNN's GRU or LSTM forward over ``seq`` steps of ``batch`` rows, one layer, one or both directions.

    ``cell``: "gru" or "lstm". ``w`` [D, G*H, I], ``r`` [D, G*H, H] in oneDNN's gate order (GRU z, r, h; LSTM
    i, f, c, o); ``bias`` [D, G or G+1, H] (:func:`dnnl_bias` for GRU, the summed biases for LSTM); ``direction``:
    1 forward, 2 reverse, 3 both (outputs concatenated: ``[.., D*H]``). ``batch_first``: the source and destination
    are ``[batch, seq, C]`` rather than ``[seq, batch, C]``. Keys are thread counts; a call passes the addresses of
    ``(src_layer, src_iter, dst_layer, dst_iter)`` (GRU) or ``(src_layer, src_iter, src_iter_c, dst_layer,
    dst_iter, dst_iter_c)`` (LSTM), the states dense ``[D, batch, H]``. ``dtype``: :data:`F32` or :data:`BF16`
    for data, states and weights (the weights are given f32 and converted once); the bias stays f32.
    """

    def __init__(self, lib: Library, cell: str, seq: int, batch: int, batch_first: bool, w: np.ndarray,
                 r: np.ndarray, bias: np.ndarray, direction: int, linear_before_reset: bool = False,
                 dtype: int = F32):
        super().__init__(lib)
        dirs, hidden, inputs = w.shape[0], r.shape[2], w.shape[2]
        gates = w.shape[1] // hidden
        self.cell, self.lbr, self.direction = cell, linear_before_reset, direction
        # ldigo: [layer, direction, input, gate, hidden]
        w_layer, w_iter = (np.ascontiguousarray(a.reshape(dirs, gates, hidden, -1).transpose(0, 3, 1, 2)[None],
                                                np.float32) for a in (w, r))
        self._weights(w_layer, w_iter, np.ascontiguousarray(bias[None], np.float32), dtype)

        def sequence(channels: int) -> ctypes.c_void_p:  # dims (T, N, C) in the caller's layout
            strides = (channels, seq * channels, 1) if batch_first else (batch * channels, channels, 1)
            return self.md((seq, batch, channels), strides, dtype)

        self.x_md, self.y_md = sequence(inputs), sequence(dirs * hidden if direction == 3 else hidden)
        self.h_md = self.md(*dense((1, dirs, batch, hidden), dtype)[:2], dtype)

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd, h = self.lib, ctypes.c_void_p(), self.h_md
        if self.cell == "lstm":
            name = "lstm_forward_primitive_desc_create"
            status = lib.lib.dnnl_lstm_forward_primitive_desc_create(
                ctypes.byref(pd), lib.engine, _FWD_INFERENCE, self.direction, self.x_md, h, h, self.w_layer_md,
                self.w_iter_md, None, None, self.b_md, self.y_md, h, h, 0, attr)
        else:
            name = "lbr_gru_forward_primitive_desc_create" if self.lbr else "gru_forward_primitive_desc_create"
            status = getattr(lib.lib, f"dnnl_{name}")(
                ctypes.byref(pd), lib.engine, _FWD_INFERENCE, self.direction, self.x_md, h, self.w_layer_md,
                self.w_iter_md, self.b_md, self.y_md, h, 0, attr)
        lib.check(status, name)
        return pd

    def _runtime(self, key: int) -> list[tuple[int, ctypes.c_void_p]]:
        x, y, h = self.x_md, self.y_md, self.h_md
        if self.cell == "lstm":
            return [(_SRC_LAYER, x), (_SRC_ITER, h), (_SRC_ITER_C, h), (_DST_LAYER, y), (_DST_ITER, h),
                    (_DST_ITER_C, h)]
        return [(_SRC_LAYER, x), (_SRC_ITER, h), (_DST_LAYER, y), (_DST_ITER, h)]


#: ``(xb, states) -> (y, final states)`` or None (see :func:`sequence`)
SequenceCall = Callable[[torch.Tensor, list[torch.Tensor]], "tuple[torch.Tensor, list[torch.Tensor]] | None"]


def sequence(lib: Library, cell: str, w: np.ndarray, r: np.ndarray, bias: np.ndarray, direction: int,
             linear_before_reset: bool = False) -> SequenceCall:
    """A call ``(xb, states) -> (y, finals)`` on oneDNN's GRU or LSTM (``cell``): ``xb`` batch-major
    ``[batch, seq, I]`` (any strides: a ``[seq, batch, I]`` tensor seen batch-major runs in place), ``states``
    ``[h0]`` (GRU) or ``[h0, c0]`` (LSTM), each [D, batch, H]; ``y`` batch-major ``[batch, seq, D*H]``, ``finals``
    like ``states``. ``w``, ``r``, ``bias`` as :class:`SequencePrimitive` takes them. Returns None for what it does
    not take (not f32 or bf16, an empty batch or sequence, a shape beyond :data:`SHAPES`, a configuration oneDNN
    declines): callers then run ATen.
    """
    dirs, hidden = w.shape[0], r.shape[2]

    def make(key: tuple[int, int, bool, torch.dtype]) -> SequencePrimitive | None:
        seq, batch, batch_first, dtype = key
        if seq <= 0 or batch <= 0:  # oneDNN's RNN code divides by the batch (SIGFPE)
            return None
        op = SequencePrimitive(lib, cell, seq, batch, batch_first, w, r, bias, direction, linear_before_reset,
                               _DTYPES[dtype])
        try:
            op.planned_impl(1)  # a configuration oneDNN declines fails here, not in a call
        except DnnlError:
            return None
        return op

    made: dict[tuple[int, int, bool, torch.dtype], SequencePrimitive | None] = {}
    lock = threading.Lock()

    def primitive(key: tuple[int, int, bool, torch.dtype]) -> SequencePrimitive | None:
        """The primitive for a shape, made once (None: a shape it declines or one beyond :data:`SHAPES`)."""
        if key not in made:
            with lock:
                if key not in made and len(made) < SHAPES:
                    made[key] = make(key)
        return made.get(key)

    def run(xb: torch.Tensor, states: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]] | None:
        if xb.dtype not in _DTYPES or any(st.dtype != xb.dtype for st in states):
            return None
        batch, seq = xb.shape[:2]
        batch_first = xb.is_contiguous()
        if not batch_first and not xb.transpose(0, 1).is_contiguous():
            xb, batch_first = xb.contiguous(), True
        op = primitive((seq, batch, batch_first, xb.dtype))
        if op is None:
            return None
        width = dirs * hidden
        y = xb.new_empty((batch, seq, width)) if batch_first else xb.new_empty((seq, batch, width)).transpose(0, 1)
        states = [st.contiguous() for st in states]
        finals = [torch.empty_like(st) for st in states]
        addresses = (xb.data_ptr(), *(st.data_ptr() for st in states), y.data_ptr(), *(f.data_ptr() for f in finals))
        if cell == "gru" and batch * hidden < SMALL:
            with omp_threads(1):
                op(1, *addresses)
        else:
            op(torch.get_num_threads(), *addresses)
        return y, finals

    return run


def gru_sequence(lib: Library, w: np.ndarray, r: np.ndarray, wb: np.ndarray, rb: np.ndarray, direction: int,
                 linear_before_reset: bool) -> SequenceCall:
    """:func:`sequence` for a GRU: ``w``, ``r``, ``wb``, ``rb`` per direction, gate order z, r, h (``wb``, ``rb``
    [D, 3H])."""
    bias = np.stack([dnnl_bias(wb[d], rb[d], linear_before_reset) for d in range(w.shape[0])])
    return sequence(lib, "gru", w, r, bias, direction, linear_before_reset)


def lstm_sequence(lib: Library, w: np.ndarray, r: np.ndarray, wb: np.ndarray, rb: np.ndarray,
                  direction: int) -> SequenceCall:
    """:func:`sequence` for an LSTM: ``w``, ``r``, ``wb``, ``rb`` per direction, gate order i, f, c, o (``wb``,
    ``rb`` [D, 4H], summed into oneDNN's one bias per gate)."""
    dirs, hidden = w.shape[0], r.shape[2]
    return sequence(lib, "lstm", w, r, (wb + rb).reshape(dirs, 4, hidden), direction)
