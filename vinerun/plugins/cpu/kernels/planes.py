"""NCHW f32 planes into a channels-last u8 / s8 (QuantizeLinear) or bf16 (Convert) array: the step that takes a
model's image input to its first convolution, as the C kernel ``csrc/planes.c``.

oneDNN's reorder does it in its generic jit:uni kernel when the channels are few (a 3-channel image: 1x3x224x224
on one thread here ~200 us quantizing, ~190 us to bf16); the C kernel writes 16 pixels' 3 channels as whole
vectors (70-100 us). The quantization is QuantizeLinear's bit for bit (a division by the scale, rounding half to
even, saturation), or openvino's FakeQuantize's (a product and a shift); bf16 rounds to nearest even as oneDNN's
conversion does.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from vinerun.plugins.cpu.kernels import _ckernel
from vinerun.plugins.cpu.kernels._ckernel import Api, CKernel
from vinerun.plugins.cpu.kernels._dnnl import Library
from vinerun.plugins.cpu.kernels._native import ValueLayout, channels_last_value, dense_value, element_layout
from vinerun.plugins.cpu.kernels._torch import BF16
from vinerun.transformations.low_precision.params import Quantization, fake_quantize_shift


class _Params(ctypes.Structure):
    """``planes`` of csrc/planes.c."""

    _fields_ = [("api", Api), ("n", ctypes.c_int64), ("c", ctypes.c_int64), ("hw", ctypes.c_int64),
                ("bf16", ctypes.c_int64), ("scale", ctypes.c_float), ("zero_point", ctypes.c_float),
                ("lo", ctypes.c_float), ("hi", ctypes.c_float), ("fake_quantize", ctypes.c_int64),
                ("isc", ctypes.c_float), ("ish", ctypes.c_float)]


class PlanesToChannelsLast(CKernel):
    """``[n, c, h, w]`` f32 into ``[n, h, w, c]``: quantized by ``q`` (u8 / s8), or converted to bf16 where ``q``
    is None. Keys are thread counts; a call passes ``(src, dst)`` addresses."""

    entry = "planes"

    def __init__(self, lib: Library, shape: tuple[int, ...], q: Quantization | None):
        super().__init__(lib)
        self.dims = (shape[0], shape[1], int(np.prod(shape[2:])))
        self.q = q
        out = q.dtype if q is not None else BF16
        self.src_md = self.md(*element_layout(dense_value(shape, np.dtype(np.float32))))
        self.dst_md = self.md(*element_layout(channels_last_value(shape, out)))

    @staticmethod
    def takes(src: ValueLayout, dst: ValueLayout) -> bool:
        """Whether the kernel runs between these layouts (4-D dense f32 into channels-last of the same shape) and
        was built; the caller checks the destination type (u8 / s8 with one scale, or bf16)."""
        shape = src[0]
        return _ckernel.available() and len(shape) == 4 and src == dense_value(shape, np.dtype(np.float32)) and \
            dst == channels_last_value(shape, dst[2])

    def _params(self, key: int) -> tuple[ctypes.Structure, Any]:
        del key
        q = self.q
        if q is None:
            return _Params(Api.of(self.lib), *self.dims, 1, 1.0, 0.0, 0.0, 0.0), None
        lo, hi = q.limits
        fq = fake_quantize_arithmetic(q)  # its shift holds the zero point
        isc, ish = fq or (0.0, 0.0)
        zero_point = 0 if fq else q.zero_point
        return _Params(Api.of(self.lib), *self.dims, 0, q.scale, zero_point, lo, hi, fq is not None, isc, ish), None


def fake_quantize_arithmetic(q: Quantization) -> tuple[float, float] | None:
    """(isc, ish) for a quantization that came from a FakeQuantize: openvino computes its integers as
    ``round(x * isc + ish)``, not ``round(x / scale) + zero_point``, and a tie falls differently. Its shift is the
    FakeQuantize's ``-low * isc`` plus the integer grid's low end (where its output range starts); None for a
    QuantizeLinear."""
    if q.fake_quantize_range is None:
        return None
    f32 = np.float32
    isc = q.fake_quantize_scale()
    lo, hi = q.limits
    shift = fake_quantize_shift(f32(f32(-q.fake_quantize_limits()[0] * isc) + f32(lo)), f32(hi - lo))
    return float(isc), float(shift)
