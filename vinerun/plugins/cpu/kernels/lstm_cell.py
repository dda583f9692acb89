"""LSTMCell (f32, constant weights, default activations, no clip) on oneDNN's LSTM primitive.

One primitive per batch size computes the step (both products, the gates, the state update) with the weights
reordered once to its own layout; being one primitive, the cell also runs inside native segments. Measured on
silero-vad's size (I = H = 128, a 2-core Zen4 VM), a call from Python at batch 1 / 4 / 16: 10.4 / 16.2 / 49.2 us
at 1 thread (8.5 / 13.2 / 31.5 at 2), where one oneDNN MatMul on ``[x, h]`` with the activations as post-ops
and the state update in NumPy took 13.6 / 22.8 / 57.3 us, ``torch._VF.lstm_cell`` (weights in ATen's i, f, g, o)
36 / 55 / 100 us and the NumPy reference 81 / 91 / 197 us. ``torch._VF.lstm_cell`` stays as the path without
oneDNN and for batch sizes beyond the primitives made.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._dnnl import (
    _FWD_INFERENCE,
    _Q_WEIGHTS_MD,
    ARG_BIAS,
    F32,
    DnnlError,
    Library,
    Primitive,
    PrimitiveCache,
    library,
)
from vinerun.plugins.cpu.kernels._dnnl_ops import dense
from vinerun.plugins.cpu.kernels._native import Buffer, NativeStep, ValueLayout, dense_value

_DEFAULT = ["sigmoid", "tanh", "tanh"]
#: distinct batch sizes the kernel makes primitives for (each with its own packed weights)
BATCH_SIZES = 4
# oneDNN arguments (dnnl_types.h) and its left-to-right direction
_SRC_LAYER, _SRC_ITER, _SRC_ITER_C, _DST_LAYER, _DST_ITER, _DST_ITER_C = 1, 2, 3, 17, 18, 19
_WEIGHTS_LAYER, _WEIGHTS_ITER, _LEFT_TO_RIGHT = 33, 34, 1
_F32 = np.dtype(np.float32)


def _gates(a: np.ndarray, order: str) -> list[np.ndarray]:
    """The gate blocks of OpenVINO-ordered (f, i, c, o) ``a`` in ``order``."""
    parts = dict(zip("fico", np.split(a, 4, axis=0), strict=True))
    return [parts[g] for g in order]


class RnnPrimitive(Primitive):
    """A oneDNN RNN primitive's constant weights: ``w_layer`` and ``w_iter`` (ldigo, f32) reordered to the layout
    the primitive wants once, and the f32 ``bias``."""

    def _weights(self, w_layer: np.ndarray, w_iter: np.ndarray, bias: np.ndarray, dtype: int = F32) -> None:
        """The f32 weights, reordered (and converted to ``dtype``) to the primitive's layout once; the bias f32."""
        self.w_layer, self.w_iter, self.bias = w_layer, w_iter, bias
        self.b_md = self.md(*dense(bias.shape, F32)[:2])
        self.w_layer_md, self.w_iter_md = self.md(w_layer.shape, None, dtype), self.md(w_iter.shape, None, dtype)

    def _constants(self, pd: ctypes.c_void_p) -> list[tuple[int, ctypes.c_void_p]]:
        lib = self.lib
        query = lib.lib.dnnl_primitive_desc_query_md
        layer = self.reordered(self.w_layer, ctypes.c_void_p(query(pd, _Q_WEIGHTS_MD, 0)))
        state = self.reordered(self.w_iter, ctypes.c_void_p(query(pd, _Q_WEIGHTS_MD, 1)))
        bias = self._own("memory", lib.memory(self.b_md, self.bias.ctypes.data))
        return [(_WEIGHTS_LAYER, layer), (_WEIGHTS_ITER, state), (ARG_BIAS, bias)]


class LstmCellPrimitive(RnnPrimitive):
    """oneDNN's LSTM forward for one layer, direction and time step of ``batch`` rows; ``w`` [4H, I], ``r``
    [4H, H], ``b`` [4H] in OpenVINO's gate order (f, i, c, o), reordered to oneDNN's (i, f, c, o) once.

    A call passes ``(x, h', h, c, c', h')`` addresses: oneDNN writes the new hidden state twice (the layer's
    output and the last state), here into one buffer.
    """

    def __init__(self, lib: Library, batch: int, w: np.ndarray, r: np.ndarray, b: np.ndarray):
        super().__init__(lib)
        hidden, inputs = r.shape[1], w.shape[1]
        # oneDNN's ldigo layout: [layer, direction, input, gate, hidden]
        w_layer, w_iter = (np.ascontiguousarray(np.stack(_gates(a, "ifco")).transpose(2, 0, 1)[None, None])
                           for a in (w, r))
        self._weights(w_layer, w_iter, np.ascontiguousarray(np.stack(_gates(b, "ifco"))[None, None], np.float32))
        self.x_md, self.y_md = self.md(*dense((1, batch, inputs), F32)), self.md(*dense((1, batch, hidden), F32))
        self.h_md = self.md(*dense((1, 1, batch, hidden), F32))  # each state, in and out

    def _descriptor(self, key: int, attr: ctypes.c_void_p) -> ctypes.c_void_p:
        lib, pd, h = self.lib, ctypes.c_void_p(), self.h_md
        lib.check(lib.lib.dnnl_lstm_forward_primitive_desc_create(
            ctypes.byref(pd), lib.engine, _FWD_INFERENCE, _LEFT_TO_RIGHT, self.x_md, h, h, self.w_layer_md,
            self.w_iter_md, None, None, self.b_md, self.y_md, h, h, 0, attr), "lstm_forward_primitive_desc_create")
        return pd

    def _runtime(self, key: int) -> list[tuple[int, ctypes.c_void_p]]:
        h = self.h_md
        return [(_SRC_LAYER, self.x_md), (_DST_LAYER, self.y_md), (_SRC_ITER, h), (_SRC_ITER_C, h),
                (_DST_ITER_C, h), (_DST_ITER, h)]



def _supported(node: Node) -> bool:
    acts = [a.lower() for a in node.activations or []]  # type: ignore[attr-defined]
    return ((not acts or acts == _DEFAULT) and not node.clip  # type: ignore[attr-defined]
            and all(node.get_input_element_type(i).get_type_name() == "f32" for i in range(node.get_input_size())))


def _torch_cell(w: np.ndarray, r: np.ndarray, b: np.ndarray, reference: Callable[[list], list]) -> Callable:
    """``torch._VF.lstm_cell`` with the weights in ATen's gate order (i, f, g, o); inputs it does not take (batch
    sizes that differ, other types) run ``reference``."""
    w_ih, w_hh, b_ih = (torch.from_numpy(np.ascontiguousarray(np.concatenate(_gates(a, "ifco")))) for a in (w, r, b))
    inputs, hidden = w.shape[1], r.shape[1]

    def run(args: list) -> list:
        x, h, c = args[:3]
        if not (x.dtype == h.dtype == c.dtype == _F32 and x.ndim == h.ndim == c.ndim == 2
                and x.shape[1] == inputs and h.shape == c.shape == (x.shape[0], hidden)):
            return reference(args)
        hx = (torch.from_numpy(np.ascontiguousarray(h)), torch.from_numpy(np.ascontiguousarray(c)))
        h_new, c_new = torch._VF.lstm_cell(torch.from_numpy(np.ascontiguousarray(x)), hx, w_ih, w_hh, b_ih)
        return [h_new.numpy(), c_new.numpy()]

    return run


def _bind(lib: Library, op: LstmCellPrimitive, threads: int, rows: int, inputs: int, hidden: int) -> Callable:
    """``op`` bound on this thread to buffers of its own (x, h, c in; h', c' out), pointed at once: a call is then
    one ctypes call and five small copies (8.5 us at batch 1, 2 threads), where pointing its six buffers per call
    through ``Primitive.__call__`` took 14.5. ``run(x, h, c) -> (h', c')``."""
    x, h, c, h_new, c_new = (np.empty((rows, n), np.float32) for n in (inputs, hidden, hidden, hidden, hidden))
    b = op.binding(threads)
    for mem, a in zip(b.memories, (x, h_new, h, c, c_new, h_new), strict=True):
        lib.check(lib.lib.dnnl_memory_set_data_handle(mem, a.ctypes.data), "memory_set_data_handle")
    execute, prim, stream, nargs, args = lib.lib.dnnl_primitive_execute, b.primitive, lib.stream(), len(b.args), b.args

    def run(xv: np.ndarray, hv: np.ndarray, cv: np.ndarray) -> list:
        x[...], h[...], c[...] = xv, hv, cv
        if execute(prim, stream, nargs, args):
            raise DnnlError("oneDNN LSTM cell execution failed")
        return [h_new.copy(), c_new.copy()]

    return run


@cpu_kernel("LSTMCell")
def lstm_cell(node: Node) -> Kernel | None:
    if not _supported(node):
        return None
    w, r = node.const_input(3), node.const_input(4)
    hidden = int(node.hidden_size)  # type: ignore[attr-defined]
    b = node.const_input(5) if node.has_input(5) else np.zeros(4 * hidden, np.float32)
    if w is None or r is None or b is None or r.shape != (4 * hidden, hidden) or w.shape[0] != 4 * hidden:
        return None
    w, r, b = (np.asarray(a, np.float32) for a in (w, r, b.reshape(-1)))
    fallback = _torch_cell(w, r, b, node.evaluate)
    lib = library()
    if lib is None:
        return Kernel(fallback, "aten_lstm_cell")
    inputs = w.shape[1]
    # no batch of 0: oneDNN's RNN code divides by it (SIGFPE)
    cells = PrimitiveCache(lambda rows: LstmCellPrimitive(lib, rows, w, r, b) if rows > 0 else None, BATCH_SIZES)
    x_shape = node.get_input_partial_shape(0)
    batch = x_shape[0].get_length() if x_shape.rank.is_static and x_shape[0].is_static else None
    threads, local = torch.get_num_threads, threading.local()

    def run(args: list) -> list:
        x, h, c = args[0], args[1], args[2]
        rows = x.shape[0] if x.ndim == 2 else -1
        if not (x.dtype == _F32 and h.dtype == _F32 and c.dtype == _F32 and x.shape == (rows, inputs)
                and h.shape == (rows, hidden) and c.shape == (rows, hidden)):
            return fallback(args)
        bound = local.__dict__.setdefault("bound", {})  # (rows, threads) -> this thread's call, or None
        key = (rows, threads())
        if key not in bound:
            op = cells.get(rows)
            bound[key] = None if op is None else _bind(lib, op, key[1], rows, inputs, hidden)
        call = bound[key]
        return fallback(args) if call is None else call(x, h, c)

    kernel = Kernel(run, "onednn_lstm_cell")
    if batch is not None and (op := cells.get(batch)) is not None:
        kernel.native = _native(op, batch, inputs, hidden)  # made now rather than in the first inference
    return kernel


def _native(op: LstmCellPrimitive, batch: int, inputs: int, hidden: int) -> Callable:
    """The native form: the primitive on dense x, h, c and fresh h', c' (h' given for both of its outputs)."""
    x, s = dense_value((batch, inputs), _F32), dense_value((batch, hidden), _F32)
    buffers = [Buffer(False, 0, x), Buffer(True, 0, s), Buffer(False, 1, s), Buffer(False, 2, s), Buffer(True, 1, s),
               Buffer(True, 0, s)]
    step = NativeStep(op, lambda threads: threads, buffers)

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        return step if all(layouts[i] in (None, want) for i, want in enumerate((x, s, s))) else None

    return native
