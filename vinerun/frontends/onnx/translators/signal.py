"""ONNX signal processing: DFT and STFT onto DFT/IDFT/RDFT/IRDFT/STFT; windows and MelWeightMatrix.

ONNX keeps a trailing dimension of 1 (real) or 2 (complex) on every signal; OpenVINO's real
transforms have none, so real inputs are squeezed (RDFT, STFT) or given a zero imaginary part.
"""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.node import Output
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import FloorMod, Multiply
from vinerun.ops.broadcast import Broadcast
from vinerun.ops.concat_split import Concat
from vinerun.ops.convert import Convert
from vinerun.ops.dft import DFT, IDFT, IRDFT, RDFT, STFT
from vinerun.ops.reshape import Reshape, Squeeze, Unsqueeze
from vinerun.ops.shape_of import ShapeOf
from vinerun.ops.windows import BlackmanWindow, HammingWindow, HannWindow, MelWeightMatrix


def _as_vector(ctx, x: Output) -> Output:
    """A scalar or 1-element integer input as an i64 vector ``[1]``."""
    if x.element_type != Type.i64:
        x = Convert(x, destination_type=Type.i64).output(0)
    return Reshape(x, ctx.constant(np.array([1], np.int64))).output(0)


def _complexify(ctx, x: Output) -> Output:
    """``[..., 1]`` real -> ``[..., 2]`` with a zero imaginary part."""
    zero = Multiply(x, ctx.constant(np.zeros((), x.element_type.to_dtype()))).output(0)
    return Concat([x, zero], axis=-1).output(0)


def _dft(ctx, axis: Output):
    x = ctx.input(0)
    ps = x.partial_shape
    if ps.rank.is_dynamic or ps[-1].is_dynamic or ps[-1].get_length() not in (1, 2):
        raise ctx.unsupported(f"the signal must end in a static dimension of 1 or 2, got {ps}")
    is_real = ps[-1].get_length() == 1
    inverse, onesided = bool(ctx.attr("inverse", 0)), bool(ctx.attr("onesided", 0))
    sizes = [_as_vector(ctx, ctx.input(1))] if ctx.has_input(1) else []
    if is_real and not inverse and onesided:
        return RDFT(Squeeze(x, ctx.constant(np.array([-1], np.int64))).output(0), axis, *sizes).output(0)
    if not is_real and inverse and onesided:
        real = IRDFT(x, axis, *sizes).output(0)
        return Unsqueeze(real, ctx.constant(np.array([-1], np.int64))).output(0)
    if onesided:
        raise ctx.unsupported("onesided is only supported for a forward DFT of a real signal "
                              "or an inverse DFT of a complex one")
    z = _complexify(ctx, x) if is_real else x
    return (IDFT if inverse else DFT)(z, axis, *sizes).output(0)


@onnx_op("DFT", since=17)
def dft17(ctx):
    rank = ctx.input(0).partial_shape.rank.get_length()
    axis = ctx.attr("axis", 1)
    return _dft(ctx, ctx.constant(np.array([axis + rank if axis < 0 else axis], np.int64)))


@onnx_op("DFT", since=20)
def dft20(ctx):
    """Opset 20: the axis is input 2 (default -2), counted over the rank including the trailing 1/2."""
    rank = ctx.input(0).partial_shape.rank.get_length()
    if not ctx.has_input(2):
        return _dft(ctx, ctx.constant(np.array([rank - 2], np.int64)))
    axis = ctx.const_value(2)
    if axis is not None:
        a = int(np.asarray(axis).reshape(-1)[0])
        return _dft(ctx, ctx.constant(np.array([a + rank if a < 0 else a], np.int64)))
    wrapped = FloorMod(_as_vector(ctx, ctx.input(2)), ctx.constant(np.array([rank], np.int64))).output(0)
    return _dft(ctx, wrapped)


@onnx_op("STFT", since=17)
def stft(ctx):
    """A real signal is ``[batch, length, 1]`` as the spec writes it, or ``[batch, length]`` as torch's
    exporter (and onnxruntime and OpenVINO, which accept it) writes it; complex ``[batch, length, 2]`` is not."""
    signal = ctx.input(0)
    ps = signal.partial_shape
    rank = None if ps.rank.is_dynamic else ps.rank.get_length()
    if rank == 3 and ps[-1].is_static and ps[-1].get_length() == 2:
        raise ctx.unsupported("complex signals [batch, length, 2] are not supported, only real ones")
    if rank not in (2, 3) or (rank == 3 and not (ps[-1].is_static and ps[-1].get_length() == 1)):
        raise ctx.unsupported(f"only real signals [batch, length] or [batch, length, 1] are supported, got {ps}")
    if not ctx.attr("onesided", 1):
        raise ctx.unsupported("onesided=0")
    step = ctx.input(1)
    if ctx.has_input(2):
        window = ctx.input(2)
        size = ctx.input(3) if ctx.has_input(3) else Squeeze(
            ShapeOf(window).output(0), ctx.constant(np.array([0], np.int64))).output(0)
    elif ctx.has_input(3):
        size = ctx.input(3)
        one = ctx.constant(np.ones((), signal.element_type.to_dtype()))
        window = Broadcast(one, _as_vector(ctx, size)).output(0)
    else:
        raise ctx.unsupported("needs a window or a frame_length")
    real = Squeeze(signal, ctx.constant(np.array([-1], np.int64))).output(0) if rank == 3 else signal
    return STFT(real, window, size, step).output(0)


def _window(op_type: str, cls: type) -> None:
    @onnx_op(op_type, since=17)
    def translate(ctx):
        return cls(ctx.input(0), periodic=bool(ctx.attr("periodic", 1)),
                   output_type=Type.from_onnx(ctx.attr("output_datatype", 1))).output(0)


for _name, _cls in [("HannWindow", HannWindow), ("HammingWindow", HammingWindow),
                    ("BlackmanWindow", BlackmanWindow)]:
    _window(_name, _cls)


@onnx_op("MelWeightMatrix", since=17)
def mel_weight_matrix(ctx):
    return MelWeightMatrix(*(ctx.input(i) for i in range(5)),
                           output_type=Type.from_onnx(ctx.attr("output_datatype", 1))).output(0)
