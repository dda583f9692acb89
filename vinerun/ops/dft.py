"""Discrete Fourier transforms: DFT, IDFT (opset7), RDFT, IRDFT (opset9) and STFT (opset15).

Complex tensors are real tensors with a trailing dimension of 2 (real, imaginary). ``axes`` count
over the dimensions before that trailing one. ``signal_size`` (optional) pads with zeros or trims
each transformed axis; -1 keeps it. IDFT and IRDFT divide by the number of points.
RDFT takes a real input and keeps ``n // 2 + 1`` bins on its last transformed axis; IRDFT inverts
that (its output has ``2 * (m - 1)`` points there unless ``signal_size`` says otherwise).
"""

from __future__ import annotations

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ops._base import normalize_axis


def _work_dtype(dtype: np.dtype) -> type:
    """float32 data transforms in single precision (as ONNX computes it), the rest in double."""
    return np.float32 if np.dtype(dtype) == np.float32 else np.float64


def to_complex(x: np.ndarray) -> np.ndarray:
    t = _work_dtype(x.dtype)
    return x[..., 0].astype(t) + np.complex64(1j) * x[..., 1].astype(t)


def from_complex(z: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1).astype(dtype)


class _FFTBase(Node):
    """``(data, axes[, signal_size])``; subclasses define the transform and the output sizes."""

    num_inputs = (2, 3)
    complex_input = True

    def _signal_rank(self, rank: int) -> int:
        return rank - 1 if self.complex_input else rank

    def _axes(self, rank: int, raw: np.ndarray) -> list[int]:
        n = self._signal_rank(rank)
        axes = [normalize_axis(int(a), n, self) for a in np.asarray(raw).reshape(-1)]
        if len(set(axes)) != len(axes):
            raise ValidationError(f"axes {axes} repeat an axis")
        return axes

    def _sizes(self, raw: np.ndarray | None, count: int) -> list[int]:
        if raw is None:
            return [-1] * count
        sizes = [int(s) for s in np.asarray(raw).reshape(-1)]
        if len(sizes) != count:
            raise ValidationError(f"signal_size has {len(sizes)} values for {count} axes")
        return sizes

    def _out_len(self, in_len: Dimension, size: int, is_last: bool) -> Dimension:
        return Dimension(size) if size != -1 else in_len

    def infer(self) -> list:
        et, ps = self.get_input_element_type(0), self.get_input_partial_shape(0)
        if ps.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        rank = ps.rank.get_length()
        if self.complex_input and (rank < 2 or ps[-1].is_static and ps[-1].get_length() != 2):
            raise ValidationError(f"a complex input must end in a dimension of 2, got {ps}")
        raw_axes = self.const_input(1)
        raw_sizes = self.const_input(2) if self.get_input_size() > 2 else np.array([])
        signal = list(ps)[:self._signal_rank(rank)]
        if raw_axes is None or raw_sizes is None:
            return [(et, PartialShape.dynamic(self._out_rank(len(signal))))]
        axes = self._axes(rank, raw_axes)
        sizes = self._sizes(raw_sizes if raw_sizes.size else None, len(axes))
        for k, (a, s) in enumerate(zip(axes, sizes, strict=True)):
            signal[a] = self._out_len(signal[a], s, k == len(axes) - 1)
        return [(et, PartialShape(signal + self._out_tail()))]

    def _out_rank(self, signal_rank: int) -> int:
        return signal_rank + len(self._out_tail())

    def _out_tail(self) -> list[int]:
        return [2]

    def evaluate(self, inputs: list) -> list:
        x = inputs[0]
        axes = self._axes(x.ndim, inputs[1])
        sizes = self._sizes(inputs[2] if len(inputs) > 2 and np.asarray(inputs[2]).size else None, len(axes))
        return [self.transform(x, axes, sizes)]

    def transform(self, x: np.ndarray, axes: list[int], sizes: list[int]) -> np.ndarray:
        raise NotImplementedError


def _resolve(shape: tuple[int, ...], axes: list[int], sizes: list[int]) -> list[int]:
    return [shape[a] if s == -1 else s for a, s in zip(axes, sizes, strict=True)]


@register_op
class DFT(_FFTBase):
    """Forward complex DFT over ``axes``."""

    type_name, version = "DFT", "opset7"

    def transform(self, x, axes, sizes):
        z = np.fft.fftn(to_complex(x), s=_resolve(x.shape, axes, sizes), axes=axes)
        return from_complex(z, x.dtype)


@register_op
class IDFT(_FFTBase):
    """Inverse complex DFT over ``axes`` (divided by the number of points)."""

    type_name, version = "IDFT", "opset7"

    def transform(self, x, axes, sizes):
        z = np.fft.ifftn(to_complex(x), s=_resolve(x.shape, axes, sizes), axes=axes)
        return from_complex(z, x.dtype)


@register_op
class RDFT(_FFTBase):
    """DFT of a real input; the last transformed axis keeps ``n // 2 + 1`` bins."""

    type_name, version = "RDFT", "opset9"
    complex_input = False

    def _out_len(self, in_len: Dimension, size: int, is_last: bool) -> Dimension:
        n = Dimension(size) if size != -1 else in_len
        if not is_last:
            return n
        return Dimension(n.get_length() // 2 + 1) if n.is_static else Dimension()

    def transform(self, x, axes, sizes):
        z = np.fft.rfftn(x.astype(_work_dtype(x.dtype)), s=_resolve(x.shape, axes, sizes), axes=axes)
        return from_complex(z, x.dtype)


@register_op
class IRDFT(_FFTBase):
    """Inverse of RDFT: a half spectrum in, a real signal out."""

    type_name, version = "IRDFT", "opset9"

    def _out_len(self, in_len: Dimension, size: int, is_last: bool) -> Dimension:
        if size != -1:
            return Dimension(size)
        if not is_last:
            return in_len
        return Dimension(2 * (in_len.get_length() - 1)) if in_len.is_static else Dimension()

    def _out_tail(self) -> list[int]:
        return []

    def transform(self, x, axes, sizes):
        s = [x.shape[a] if v == -1 else v for a, v in zip(axes, sizes, strict=True)]
        if sizes[-1] == -1:
            s[-1] = 2 * (x.shape[axes[-1]] - 1)
        return np.fft.irfftn(to_complex(x), s=s, axes=axes).astype(x.dtype)


def stft(signal: np.ndarray, window: np.ndarray, frame_size: int, frame_step: int) -> np.ndarray:
    """``[batch, signal_len]`` real -> ``[batch, frames, frame_size // 2 + 1]`` complex (window centred)."""
    length = signal.shape[-1]
    if frame_size <= 0 or frame_step <= 0 or frame_size > length:
        raise ValidationError(f"frame_size {frame_size} and frame_step {frame_step} do not fit a signal of "
                              f"{length} samples")
    if window.shape[0] > frame_size:
        raise ValidationError(f"window of {window.shape[0]} samples is longer than frame_size {frame_size}")
    pad = frame_size - window.shape[0]
    win = np.pad(window.astype(np.float64), (pad // 2, pad - pad // 2))
    frames = (length - frame_size) // frame_step + 1
    starts = np.arange(frames)[:, None] * frame_step + np.arange(frame_size)[None, :]
    framed = signal.astype(np.float64)[..., starts] * win
    return np.fft.rfft(framed, axis=-1)


@register_op
class STFT(Node):
    """``(signal [B?, L], window [W], frame_size, frame_step)`` -> ``[B?, frames, frame_size // 2 + 1, 2]``.

    With ``transpose_frames`` the frames and bins axes swap.
    """

    type_name, version, num_inputs = "STFT", "opset15", (4, 4)
    transpose_frames = Attr("bool", False)

    def infer(self) -> list:
        et, ps = self.get_input_element_type(0), self.get_input_partial_shape(0)
        if ps.rank.is_dynamic:
            return [(et, PartialShape.dynamic())]
        if ps.rank.get_length() not in (1, 2):
            raise ValidationError(f"signal must be [length] or [batch, length], got {ps}")
        size, step = self.const_input(2), self.const_input(3)
        batch = list(ps)[:-1]
        if size is None or step is None or ps[-1].is_dynamic:
            frames, bins = Dimension(), Dimension() if size is None else Dimension(int(size) // 2 + 1)
        else:
            frames = Dimension((ps[-1].get_length() - int(size)) // int(step) + 1)
            bins = Dimension(int(size) // 2 + 1)
        tail = [bins, frames] if self.transpose_frames else [frames, bins]
        return [(et, PartialShape(batch + tail + [2]))]

    def evaluate(self, inputs: list) -> list:
        signal, window, size, step = inputs
        z = stft(signal, window, int(np.asarray(size).reshape(-1)[0]), int(np.asarray(step).reshape(-1)[0]))
        if self.transpose_frames:
            z = np.swapaxes(z, -1, -2)
        return [from_complex(z, signal.dtype)]
