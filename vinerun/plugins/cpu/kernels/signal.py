"""Fourier transform kernels on ``torch.fft``: DFT, RDFT, IRDFT and STFT for f32/f64 tensors.

IDFT stays on the reference: its near-zero outputs carry float32 rounding noise of ~1e-7 that
differs between MKL and pocketfft, and the ONNX suite compares them with an absolute tolerance of 1e-7.
"""

from __future__ import annotations

import numpy as np
import torch

from vinerun.ir.node import Node
from vinerun.plugins.cpu.kernels import Kernel, cpu_kernel
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch
from vinerun.plugins.cpu.thread_governor import omp_threads

_FLOAT = ("f32", "f64")
#: framed samples (frames x frame size) below which an STFT runs on one thread
STFT_SMALL = 1 << 18


def _prepare(node: Node, inputs: list) -> tuple[torch.Tensor, list[int], list[int]]:
    x = inputs[0]
    axes = node._axes(x.ndim, inputs[1])
    sizes = node._sizes(inputs[2] if len(inputs) > 2 and inputs[2].size else None, len(axes))
    return to_torch(x), axes, sizes


@cpu_kernel("DFT", "RDFT", "IRDFT")
def fourier(node: Node) -> Kernel | None:
    if node.get_input_element_type(0).get_type_name() not in _FLOAT:
        return None
    kind = node.type_name

    def run(inputs: list) -> list:
        x, axes, sizes = _prepare(node, inputs)
        if kind == "RDFT":
            s = [x.shape[a] if v == -1 else v for a, v in zip(axes, sizes, strict=True)]
            return [to_numpy(torch.view_as_real(torch.fft.rfftn(x, s=s, dim=axes)).contiguous())]
        z = torch.view_as_complex(x.contiguous())
        s = [z.shape[a] if v == -1 else v for a, v in zip(axes, sizes, strict=True)]
        if kind == "IRDFT":
            if sizes[-1] == -1:
                s[-1] = 2 * (z.shape[axes[-1]] - 1)
            return [to_numpy(torch.fft.irfftn(z, s=s, dim=axes).contiguous())]
        return [to_numpy(torch.view_as_real(torch.fft.fftn(z, s=s, dim=axes)).contiguous())]

    return Kernel(run, f"torch_fft_{kind.lower()}")


@cpu_kernel("STFT")
def stft(node: Node) -> Kernel | None:
    """All frames as one strided view (``unfold``), windowed, then one batched ``torch.fft.rfft``: kws-gru's
    [1, 16384] signal, 512-sample frames every 160 samples, 0.20-0.28 ms on the NumPy reference (f64) -> 0.034 ms
    on one thread. Below :data:`STFT_SMALL` framed samples it runs on one thread: the element-wise window and the
    FFT then take less than an OpenMP fork and join (and on a loaded 2-core machine a 2-thread call waited
    8-16 ms for a descheduled thread). Frame geometries the reference rejects go to it for its error."""
    if node.get_input_element_type(0).get_type_name() not in _FLOAT:
        return None
    transpose = bool(node.transpose_frames)  # type: ignore[attr-defined]

    def run(inputs: list) -> list:
        signal, window, size, step = inputs
        frame_size, frame_step = int(np.asarray(size).reshape(-1)[0]), int(np.asarray(step).reshape(-1)[0])
        if (window.ndim != 1 or not 0 < window.shape[0] <= frame_size <= signal.shape[-1] or frame_step <= 0
                or signal.ndim not in (1, 2)):
            return node.evaluate(inputs)
        x = to_torch(signal)
        pad = frame_size - window.shape[0]
        win = torch.nn.functional.pad(to_torch(np.asarray(window)).to(x.dtype), (pad // 2, pad - pad // 2))
        frames = x.unfold(-1, frame_size, frame_step)
        if frames.numel() < STFT_SMALL:
            with omp_threads(1):
                return [_spectrum(frames, win, transpose)]
        return [_spectrum(frames, win, transpose)]

    return Kernel(run, "torch_fft_stft")


def _spectrum(frames: torch.Tensor, window: torch.Tensor, transpose: bool) -> np.ndarray:
    """``[..., frames, size]`` windowed -> ``[..., frames, size // 2 + 1, 2]`` (frames and bins swapped with
    ``transpose``)."""
    spectrum = torch.view_as_real(torch.fft.rfft(frames * window, dim=-1))
    return to_numpy((spectrum.transpose(-3, -2) if transpose else spectrum).contiguous())
