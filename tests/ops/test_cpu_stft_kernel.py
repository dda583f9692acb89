"""The CPU STFT kernel (strided frames, one batched ``torch.fft.rfft``) against the NumPy reference: 1-D and
batched signals, windows shorter than the frame (centred, even and odd padding), transposed frames, f32 and f64,
the one-thread and the multi-thread path, a compiled model, and geometries left to the reference's error."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.dft import STFT
from vinerun.plugins.cpu.kernels import select_kernel
from vinerun.plugins.cpu.kernels import signal as kernel_module

RNG = np.random.default_rng(17)


def stft_node(signal_shape: list[int], dtype=np.float32, transpose: bool = False) -> STFT:
    t = Type(np.dtype(dtype))
    return STFT(Parameter(t, signal_shape), Parameter(t, [-1]), Parameter("i64", []), Parameter("i64", []),
                transpose_frames=transpose)


def check(node: STFT, args: list, rtol: float, atol: float) -> None:
    kernel = select_kernel(node)
    assert kernel.exec_type == "torch_fft_stft"
    got, want = kernel.fn(args)[0], node.evaluate(args)[0]
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize(("shape", "window", "size", "step"), [
    ((64,), 16, 16, 4),           # 1-D signal, window = frame
    ((3, 100), 11, 16, 7),        # batched, odd padding of the window
    ((2, 16000), 400, 512, 160),  # kws-gru's geometry
    ((1, 33), 8, 33, 1),          # one frame of the whole signal
])
def test_stft_matches_the_reference(dtype, tol, transpose, shape, window, size, step):
    node = stft_node([-1] * len(shape), dtype, transpose)
    args = [RNG.standard_normal(shape).astype(dtype), np.hanning(window).astype(dtype), np.array(size, np.int64),
            np.array(step, np.int64)]
    check(node, args, tol, tol * 10)


def test_multi_thread_path(monkeypatch):
    monkeypatch.setattr(kernel_module, "STFT_SMALL", 0)
    args = [RNG.standard_normal((2, 3000)).astype(np.float32), np.hanning(64).astype(np.float32),
            np.array(64, np.int64), np.array(16, np.int64)]
    check(stft_node([2, 3000]), args, 2e-5, 2e-4)


def test_bad_geometry_gets_the_reference_error():
    kernel = select_kernel(stft_node([1, 32]))
    signal, window = np.zeros((1, 32), np.float32), np.ones(8, np.float32)
    with pytest.raises(ValidationError, match="frame_size 64"):
        kernel.fn([signal, window, np.array(64, np.int64), np.array(8, np.int64)])
    with pytest.raises(ValidationError, match="longer than frame_size"):
        kernel.fn([signal, np.ones(16, np.float32), np.array(8, np.int64), np.array(8, np.int64)])


def test_compiled_model_matches_the_reference():
    signal = Parameter("f32", [-1, -1])
    node = STFT(signal, Constant(np.hanning(400).astype(np.float32)), Constant(np.array(512, np.int64)),
                Constant(np.array(160, np.int64)))
    model = Model([node.output(0)], [signal])
    feed = [RNG.standard_normal((1, 16384)).astype(np.float32)]
    compiled = ov.Core().compile_model(model, "CPU", F32)
    got = compiled.create_infer_request().infer(feed)[0]
    assert {s.node.type_name: s.kernel.exec_type for s in compiled._impl.plan.steps}["STFT"] == "torch_fft_stft"
    np.testing.assert_allclose(got, run_reference(model, feed)[0], rtol=2e-5, atol=2e-4)
