"""The C kernel taking NCHW f32 planes into channels-last (csrc/planes.c): its quantization is bit-identical to
QuantizeLinear's definition (division by the scale, rounding half to even, the zero point, saturation), and a
FakeQuantize's to openvino's arithmetic (a product and a shift); its bf16 conversion to ml_dtypes' rounding to
nearest even (NaN and infinities included); 3 channels (shuffled stores) and others, tails shorter than a vector,
1 and 2 threads; and a QDQ model's or a bf16 model's image input takes it."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops.test_cpu_fusions import conv_graph
from tests.unit.low_precision._qdq import depthwise_cnn, residual_cnn
from vinerun.ir.interpreter import run_reference
from vinerun.plugins.cpu import device_info
from vinerun.plugins.cpu.kernels import _ckernel
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels._native import channels_last_value, dense_value
from vinerun.plugins.cpu.kernels._torch import BF16
from vinerun.plugins.cpu.kernels.planes import PlanesToChannelsLast
from vinerun.transformations.low_precision import Quantization

pytestmark = pytest.mark.skipif(library() is None or not _ckernel.available(),
                                reason="needs the oneDNN binding and the C kernels")
SHAPES = [(1, 3, 15, 17), (2, 3, 32, 40), (2, 5, 4, 9), (1, 1, 9, 9)]


def _data(shape: tuple[int, ...], scale: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 60 * scale).astype(np.float32)
    flat = x.reshape(-1)
    flat[::7] = (rng.integers(-300, 300, flat[::7].size) + 0.5) * scale  # exact ties: half to even decides
    flat[::11] = rng.choice([-1e9, 1e9, np.inf, -np.inf], flat[::11].size)  # saturation
    return x


def _run(shape: tuple[int, ...], q: Quantization | None, x: np.ndarray, threads: int) -> np.ndarray:
    out = np.empty((shape[0], shape[2], shape[3], shape[1]), q.dtype if q is not None else BF16)
    PlanesToChannelsLast(library(), shape, q)(threads, x.ctypes.data, out.ctypes.data)
    return out.transpose(0, 3, 1, 2)


@pytest.mark.parametrize(("dtype", "zero_point"), [(np.uint8, 128), (np.int8, -3), (np.uint8, 0)])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_quantizes_as_quantize_linear_bit_for_bit(dtype, zero_point, shape, threads) -> None:
    q = Quantization(0.25, zero_point, np.dtype(dtype))  # a power of two: x / scale is exact, ties stay ties
    x = _data(shape, q.scale, len(shape) + abs(zero_point))
    np.testing.assert_array_equal(_run(shape, q, x, threads), q.quantize(x))


def test_an_arbitrary_scale_divides_as_quantize_linear_does() -> None:
    q = Quantization(0.0173, 7, np.dtype(np.uint8))
    x = _data((1, 3, 32, 32), q.scale, 5)
    np.testing.assert_array_equal(_run(x.shape, q, x, 1), q.quantize(x))


@pytest.mark.parametrize(("low", "high", "dtype"), [(-2.1875, 2.1704, np.int8), (0.0, 5.3345, np.uint8),
                                                     (-1.7185237, 1.7050978, np.int8)])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_fake_quantize_is_quantized_as_openvino_computes_it(low, high, dtype, threads) -> None:
    """From a FakeQuantize (NNCF's IR): ``round(x * isc + ish)``, the product and the sum each rounded to f32 (no
    FMA), a shift under 1e-5 of the range dropped; ``round(x / scale)`` rounds values next to a halfway point
    the other way (the symmetric s8 grid's shift is 127.99999 - 128)."""
    f32 = np.float32
    low, high = f32(low), f32(high)
    scale = f32((high - low) / f32(255))
    zero_point = 0 if dtype == np.int8 else int(np.rint(-low / scale))
    q = Quantization(float(scale), zero_point, np.dtype(dtype), (float(low), float(high)))
    isc = f32(f32(255) / f32(high - low))
    shift = f32(f32(-low * isc) + f32(q.limits[0]))
    shift = f32(0) if abs(shift) < f32(255) * f32(1e-5) else shift
    x = _data((2, 3, 32, 40), 1 / float(isc), 9)
    x.reshape(-1)[1::5] = (np.arange(x.size)[1::5] % 400 - 200 + 0.5).astype(f32) / isc  # next to halfway points
    want = np.clip(np.rint((x * isc).astype(f32) + shift), *q.limits).astype(dtype)
    got = _run(x.shape, q, x, threads)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, q.quantize(x))  # QuantizeLinear's division rounds some of them otherwise


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("threads", [1, 2])
def test_converts_to_bf16_rounding_to_nearest_even(shape, threads) -> None:
    x = _data(shape, 1.0, 3)
    x.reshape(-1)[5::13] = np.float32(1.0) + np.float32(2.0 ** -8)  # a tie between two bf16 values
    x.reshape(-1)[3::17] = np.nan
    x.reshape(-1)[4::19] = np.float32(-np.nan)
    got, want = _run(shape, None, x, threads), x.astype(BF16)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    signs = got.view(np.uint16)[nan] >> 15
    np.testing.assert_array_equal(signs, np.signbit(x[nan]).astype(np.uint16))  # a NaN keeps its sign


def test_it_takes_only_nchw_f32_into_channels_last() -> None:
    shape = (1, 3, 8, 8)
    src = dense_value(shape, np.dtype(np.float32))
    assert PlanesToChannelsLast.takes(src, channels_last_value(shape, np.dtype(np.uint8)))
    assert PlanesToChannelsLast.takes(src, channels_last_value(shape, BF16))
    assert not PlanesToChannelsLast.takes(src, dense_value(shape, np.dtype(np.uint8)))  # oneDNN's plain reorder
    f32_channels_last = channels_last_value(shape, np.dtype(np.float32))
    assert not PlanesToChannelsLast.takes(f32_channels_last, channels_last_value(shape, np.dtype(np.uint8)))


def _profiled(model, x: np.ndarray, config: dict, node_type: str) -> tuple[np.ndarray, set[str]]:
    """The output and the exec types of the ``node_type`` nodes that ran."""
    compiled = ov.Core().compile_model(model, "CPU", {**config, "PERF_COUNT": True})
    request = compiled.create_infer_request()
    got = request.infer([x])[0]
    return got, {p.exec_type for p in request.get_profiling_info()
                 if p.status == p.Status.EXECUTED and p.node_type == node_type}


@pytest.mark.parametrize("make", [residual_cnn, depthwise_cnn])
def test_a_qdq_models_f32_input_is_quantized_by_the_c_kernel(make) -> None:
    model = ov.Core().read_model(make().SerializeToString())
    x = np.random.default_rng(0).standard_normal(list(model.input(0).get_shape())).astype(np.float32)
    got, types = _profiled(model, x, {}, "QuantizeLinear")
    assert any(t.startswith("c_quantize") for t in types), types
    step = 0.01 if make is residual_cnn else 0.02  # each model's output quantization step
    assert np.abs(got - run_reference(model, [x])[0]).max() <= 2 * step + 1e-6


@pytest.mark.skipif(not device_info.has_native_bf16(), reason="no native bf16: models compile in f32")
def test_a_bf16_models_image_input_is_converted_by_the_c_kernel() -> None:
    model = conv_graph(c_in=3, c_out=16, size=20, act="relu")
    x = np.random.default_rng(1).standard_normal((1, 3, 20, 20)).astype(np.float32)
    got, types = _profiled(model, x, {"INFERENCE_PRECISION_HINT": "bf16"}, "Convert")
    assert any(t.startswith("c_convert") for t in types), types  # the input's (the output's is oneDNN's)
    want = run_reference(model, [x])[0]
    assert np.abs(got - want).max() <= 0.02 * np.abs(want).max()
