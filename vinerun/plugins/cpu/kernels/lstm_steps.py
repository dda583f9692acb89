"""An f32 LSTM at batch 1 on the repo's C step loop (``csrc/lstm.c``): the input projections of all steps as one
GEMM, then per step the recurrent product from R packed as :mod:`.gemv` packs a weight (one sequential stream)
and the gates, all steps in one C call with the GIL released.

At batch 1 each step is a matrix-vector product, a read of R (4 MB at hidden 512). oneDNN's RNN (brgemm at one
row) takes ~88 us a step for it at hidden 512, the packed stream ~45 (2-core EPYC, 1 thread). A bidirectional
LSTM of hidden 512 over 25 steps (ddddocr's): 4.3 ms on oneDNN's LSTM, 2.8 here at 1 thread (openvino 3.3);
2.3 and 1.5 at 2 threads. Hidden 256, 100 steps: 2.2 -> 1.2 ms (1 thread), 1.1 -> 0.5 (2). Against ATen's LSTM at
hidden 64-192: 1.1-1.3x faster at 1 thread, up to 1.6x at 2. Other batches keep oneDNN's LSTM (:mod:`.rnn_dnnl`)
or ATen.
"""

from __future__ import annotations

import ctypes

import numpy as np
import torch

from vinerun.plugins.cpu.kernels import _ckernel
from vinerun.plugins.cpu.kernels.fused_matmul import PackedLinearWeight
from vinerun.plugins.cpu.kernels.gemv import pack
from vinerun.plugins.cpu.kernels.rnn_dnnl import SequenceCall

_LINEAR = torch.ops.mkldnn._linear_pointwise
# vr_lstm_steps(panels, hidden, seq, reverse, xw, h, c, y, y_stride, pre) of csrc/lstm.c
_STEPS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)


def available() -> bool:
    """Whether the C kernels were built."""
    return _ckernel.available()


def lstm_batch1(w: np.ndarray, r: np.ndarray, wb: np.ndarray, rb: np.ndarray, direction: int) -> SequenceCall:
    """A call ``(xb, [h0, c0]) -> (y, [h_n, c_n])`` as :func:`.rnn_dnnl.sequence` gives, for batch 1 and f32 (None
    for anything else: the caller runs oneDNN). ``w`` [D, 4H, I], ``r`` [D, 4H, H], ``wb``, ``rb`` [D, 4H] in gate
    order i, f, c, o; ``direction`` 1 forward, 2 reverse, 3 both."""
    dirs, hidden = w.shape[0], r.shape[2]
    reverse = [False, True] if direction == 3 else [direction == 2]
    panels = [pack(np.ascontiguousarray(r[d].T, np.float32)) for d in range(dirs)]  # [H, 4H] each
    # the input projection on oneDNN's inner product, weights prepacked (MKL's addmm took 2.8x as long, 0.63 ms at
    # 25 steps, hidden 512, 1 thread)
    w_packed = [PackedLinearWeight(torch.from_numpy(np.ascontiguousarray(w[d], np.float32)), None)
                for d in range(dirs)]  # [4H, I]
    bias = [torch.from_numpy(np.asarray(wb[d] + rb[d], np.float32)) for d in range(dirs)]
    steps = _STEPS(_ckernel.entry_point("lstm_steps"))
    width = dirs * hidden

    def run(xb: torch.Tensor, states: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]] | None:
        seq = xb.shape[1]
        if (xb.dtype != torch.float32 or xb.shape[0] != 1 or seq == 0
                or any(s.dtype != torch.float32 for s in states)):
            return None
        y = xb.new_empty((1, seq, width))
        h, c = (s.clone(memory_format=torch.contiguous_format) for s in states)  # [D, 1, H]: updated in place
        pre = xb.new_empty(4 * hidden)
        x = xb[0].contiguous()  # [seq, I] (no copy when it already is)
        for d in range(dirs):
            xw = _LINEAR(x, w_packed[d].get(), bias[d], "none", [], "")  # [seq, 4H]: every step's input projection
            steps(panels[d].ctypes.data, hidden, seq, int(reverse[d]), xw.data_ptr(), h[d].data_ptr(),
                  c[d].data_ptr(), y.data_ptr() + d * hidden * y.element_size(), width, pre.data_ptr())
        return y, [h, c]

    return run
