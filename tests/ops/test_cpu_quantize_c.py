"""The C QuantizeLinear kernel (csrc/quantize.c): bit-identical to QuantizeLinear's definition (division by the
scale, rounding half to even, the zero point, saturation) from NCHW into channels-last, u8 and s8, 3 channels (the
shuffled stores) and others, with tails shorter than a vector; and a QDQ model's f32 input takes it."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.unit.low_precision._qdq import depthwise_cnn, residual_cnn
from vinerun.ir.interpreter import run_reference
from vinerun.plugins.cpu.kernels import _ckernel
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._native import channels_last_value, dense_value
from vinerun.plugins.cpu.kernels.quantize import PlaneQuantize
from vinerun.transformations.low_precision import Quantization

pytestmark = pytest.mark.skipif(library() is None or not _ckernel.available(),
                                reason="needs the oneDNN binding and the C kernels")


def _data(shape: tuple[int, ...], scale: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 60 * scale).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7] = (rng.integers(-300, 300, flat[::7].size) + 0.5) * scale  # exact ties: half to even decides
    flat[::11] = rng.choice([-1e9, 1e9, np.inf, -np.inf], flat[::11].size)  # saturation
    return x


@pytest.mark.parametrize(("dtype", "zero_point"), [(np.uint8, 128), (np.int8, -3), (np.uint8, 0)])
@pytest.mark.parametrize("shape", [(1, 3, 15, 17), (2, 3, 32, 40), (2, 5, 4, 9), (1, 1, 9, 9)])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_quantize_linear_bit_for_bit(dtype, zero_point, shape, threads) -> None:
    q = Quantization(0.25, zero_point, np.dtype(dtype))  # a power of two: x / scale is exact, ties stay ties
    x = _data(shape, q.scale, len(shape) + abs(zero_point))
    out = np.empty((shape[0], shape[2], shape[3], shape[1]), dtype)
    PlaneQuantize(library(), shape, q)(threads, x.ctypes.data, out.ctypes.data)
    np.testing.assert_array_equal(out.transpose(0, 3, 1, 2), q.quantize(x))


def test_it_takes_only_nchw_f32_into_channels_last() -> None:
    shape, q = (1, 3, 8, 8), Quantization(0.1, 0, np.dtype(np.uint8))
    src = dense_value(shape, np.dtype(np.float32))
    assert PlaneQuantize.takes(src, channels_last_value(shape, q.dtype), q)
    assert not PlaneQuantize.takes(src, dense_value(shape, q.dtype), q)  # oneDNN's plain reorder is as fast
    f32_channels_last = channels_last_value(shape, np.dtype(np.float32))
    assert not PlaneQuantize.takes(f32_channels_last, channels_last_value(shape, q.dtype), q)


def test_an_arbitrary_scale_divides_as_quantize_linear_does() -> None:
    q = Quantization(0.0173, 7, np.dtype(np.uint8))
    x = _data((1, 3, 32, 32), q.scale, 5)
    out = np.empty((1, 32, 32, 3), np.uint8)
    PlaneQuantize(library(), x.shape, q)(1, x.ctypes.data, out.ctypes.data)
    np.testing.assert_array_equal(out.transpose(0, 3, 1, 2), q.quantize(x))


@pytest.mark.parametrize("make", [residual_cnn, depthwise_cnn])
def test_a_qdq_models_f32_input_is_quantized_by_the_c_kernel(make) -> None:
    model = make()
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    compiled = ov.Core().compile_model(ov.Core().read_model(model.SerializeToString()), "CPU", {"PERF_COUNT": True})
    request = compiled.create_infer_request()
    got = request.infer([x])[0]
    types = {p.exec_type for p in request.get_profiling_info() if p.node_type == "QuantizeLinear"}
    assert any(t.startswith("c_quantize") for t in types), types
    exact = run_reference(ov.Core().read_model(model.SerializeToString()), [x])[0]
    step = 0.01 if make is residual_cnn else 0.02  # each model's output quantization step
    assert np.abs(got - exact).max() <= 2 * step + 1e-6
