"""f32 and bf16 activations and unary math of static shape through oneDNN's eltwise primitive
(:class:`._dnnl_ops.Eltwise`), as a step of native segments.

A standalone activation (one a convolution could not take as a post-op, a Sigmoid or Tanh of an LSTM gate)
otherwise ends a native segment. Here it reads its input as it arrives (channels-last, a split's strided view:
a primitive per input layout, at most :data:`LAYOUTS`) and writes the layout its readers take. Called from
Python, arrays of at most :data:`SMALL` elements keep the given kernel (NumPy's ufuncs, ATen), which costs less
there than a primitive call from Python (5 us) except for Gelu: so for the transcendental ops small arrays get a
few ulps apart from Python and in a segment (bit-equal above :data:`SMALL`, and for the exact ops).

oneDNN's transcendental functions differ from ATen's by a few ulps (sigmoid, tanh, exp, swish, x ** y) or by a
small absolute error where the result nears 0 (gelu 1e-6 like ATen's, hswish 6e-8, elu 2e-8: see the tests);
Relu, Abs, Sqrt, the square and Clamp are exact, except that oneDNN's Relu and Clamp map NaN to 0 and to the
lower bound (as the convolutions' post-ops do).
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel
from vinerun.plugins.cpu.kernels._dnnl import DATA_TYPES, ELTWISE, PrimitiveCache, data_address, library
from vinerun.plugins.cpu.kernels._dnnl_ops import Eltwise
from vinerun.plugins.cpu.kernels._native import (
    Buffer,
    NativeStep,
    ValueLayout,
    arriving_layout,
    element_layout,
    empty_of,
    layout_of_value,
    order_kept,
    output_layout,
)
from vinerun.plugins.cpu.kernels.conv_dnnl import eltwise as post_op
from vinerun.plugins.cpu.thread_governor import omp_threads

#: oneDNN eltwise kinds the convolution post-ops do not use (dnnl_alg_kind_t, oneDNN 3.x)
_SQUARE, _ABS, _SQRT, _HARDSIGMOID, _EXP, _POW = 0x23, 0x24, 0x25, 0x28, 0x2A, 0x30
#: ops without parameters: their oneDNN kind. Not Log, Mish, SoftPlus: oneDNN's are off by up to 3e-6 (Log near
#: 1), 6e-7 (Mish) and 1e-6 (SoftPlus: log(1 + exp(x)), 2% of the result at x = -10) where ATen's are within an ulp
_PLAIN = {"Sqrt": _SQRT, "Exp": _EXP, "Abs": _ABS}
#: input layouts a node makes primitives for
LAYOUTS = 4
#: at most this many elements a call from Python keeps the given kernel (2 Zen4 cores, [1, 128]: a oneDNN call costs
#: 5 us from Python on one thread, 6-10 us on two; NumPy's Relu / Tanh / Exp / Sqrt / x ** 2 0.7-1.2 us, ATen's
#: Sigmoid / HSwish / Elu / Swish 3-5 us; on 2 threads oneDNN wins from 8k elements on for Tanh, Sqrt, Exp, x ** 2)
SMALL = 8192
#: op types whose given kernel costs more at every size (ATen's Gelu: 10 us on 128 elements): small arrays run
#: oneDNN on one thread (two threads' fork and join cost more than the work)
_ALWAYS = frozenset({"Gelu"})


def _scalar(node: Node, index: int) -> float | None:
    """Constant input ``index`` when it holds one value."""
    v = node.const_input(index)
    return None if v is None or v.size != 1 else float(v.reshape(-1)[0])


def eltwise_args(node: Node) -> tuple[int, float, float] | None:
    """oneDNN's (algorithm, alpha, beta) computing ``node`` on its input 0, or None where it has none."""
    t = node.type_name
    if t in _PLAIN:
        return _PLAIN[t], 0.0, 0.0
    if t == "Gelu":
        tanh = node.approximation_mode.upper() == "TANH"  # type: ignore[attr-defined]
        return ELTWISE["gelu_tanh" if tanh else "gelu_erf"], 0.0, 0.0
    if t == "HardSigmoid":
        alpha, beta = _scalar(node, 1), _scalar(node, 2)
        return None if alpha is None or beta is None else (_HARDSIGMOID, alpha, beta)
    if t == "Power":
        e = _scalar(node, 1)
        if e is None:
            return None
        return (_SQUARE, 0.0, 0.0) if e == 2.0 else (_POW, 1.0, e)  # the square: exact, like x * x
    beta = None
    if t == "Swish" and node.get_input_size() > 1:
        beta = node.const_input(1)
        if beta is None or beta.size != 1:
            return None
    op = post_op(node, beta)
    return None if op is None else (op[1], op[2], op[3])


def dnnl_eltwise_kernel(node: Node, fallback: Kernel) -> Kernel:
    """``fallback`` with a oneDNN path (and a native form) where ``node`` is an f32/bf16 op of static shape
    that :func:`eltwise_args` maps (its other inputs constants)."""
    lib = library()
    dtype = np.dtype(node.get_output_element_type(0).to_dtype())
    shape, out = node.get_input_partial_shape(0), node.get_output_partial_shape(0)
    args = eltwise_args(node) if lib is not None and dtype.name in DATA_TYPES else None
    if (args is None or not shape.is_static or not out.is_static or shape != out
            or np.dtype(node.get_input_element_type(0).to_dtype()) != dtype):
        return fallback
    in_shape = tuple(int(d) for d in shape.to_shape())
    size = int(np.prod(in_shape))
    if not in_shape or size == 0:
        return fallback  # oneDNN takes no 0-D memory
    small = -1 if node.type_name in _ALWAYS else SMALL
    out_layout = output_layout(node, in_shape, dtype)
    primitives = PrimitiveCache(lambda key: Eltwise(lib, element_layout(key[0]), element_layout(key[1]), *args),
                                LAYOUTS)

    def dst(x: ValueLayout) -> ValueLayout:
        return order_kept(node, x, out_layout.value)

    def run(inputs: list) -> list:
        x = inputs[0]  # more than ``small`` elements: see the kernel below
        op = None
        if type(x) is np.ndarray and x.dtype == dtype and min(x.strides) >= 0:
            x_layout = layout_of_value(x)
            y_layout = dst(x_layout)
            op = primitives.get((x_layout, y_layout))
        if op is None:  # NumPy keeps a channels-last input's order: only channels-last readers may get that
            res = fallback.fn(inputs)
            return res if out_layout.channels_last else [np.ascontiguousarray(res[0])]
        y = empty_of(y_layout)
        if size > SMALL:
            op(torch.get_num_threads(), data_address(x), data_address(y))
        else:  # a small Gelu: one OpenMP thread (a fork and join costs more than the work)
            with omp_threads(1):
                op(1, data_address(x), data_address(y))
        return [y]

    def native(layouts: list[ValueLayout | None]) -> NativeStep | None:
        x = layouts[0] or arriving_layout(node, 0, in_shape, dtype)
        if x[2] != dtype or min(x[1]) < 0:
            return None
        y = dst(x)
        op = primitives.get((x, y))
        if op is None:
            return None
        return NativeStep(op, lambda threads: threads, [Buffer(False, 0, x), Buffer(True, 0, y)])

    arriving = arriving_layout(node, 0, in_shape, dtype)
    direct = size > small and primitives.get((arriving, dst(arriving))) is not None
    # small arrays: the given kernel as it is (its results are C-contiguous: no checks to pay per call)
    kernel = Kernel(run if size > small else fallback.fn,
                    "onednn_" + node.type_name.lower() if direct else fallback.exec_type)
    kernel.native = native
    return kernel
