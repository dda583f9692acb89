"""The int8 epilogue (:mod:`vinerun.plugins.cpu.kernels.int8_epilogue`): the post-op chains it writes are the
shortest the identities allow, and, run as oneDNN runs them (emulated here in NumPy), give the layer's own
stages' results: a property test against the reference arithmetic on random accumulators."""

from __future__ import annotations

import numpy as np
import pytest

from vinerun.ops.activations import gelu
from vinerun.plugins.cpu.kernels._dnnl import ARG_SRC, ELTWISE
from vinerun.plugins.cpu.kernels._dnnl_ops import BINARY_ADD, BINARY_MUL
from vinerun.plugins.cpu.kernels.int8_epilogue import Epilogue, epilogue
from vinerun.transformations.low_precision import Quantization, QuantizedLayer, Stage, Weights
from vinerun.transformations.low_precision.params import ChannelQuantization

CHANNELS = 8
NAMES = {code: name for name, code in ELTWISE.items()}
U8, S8 = np.dtype(np.uint8), np.dtype(np.int8)


def _layer(stages: list[Stage], output: Quantization | ChannelQuantization | None, bias: bool = True,
           seed: int = 0) -> QuantizedLayer:
    rng = np.random.default_rng(seed)
    weights = Weights(np.zeros((CHANNELS, 4, 1, 1), np.int8), (rng.random(CHANNELS) * 0.01 + 0.002).astype(np.float32))
    b = (rng.standard_normal(CHANNELS) * 0.3).astype(np.float32) if bias else None
    return QuantizedLayer(None, Quantization(0.02, 3, U8), weights, b, stages, output)  # type: ignore[arg-type]


def test_the_test_emulation_sees_a_wrong_chain() -> None:
    """The property check below fails a chain that drops a needed stage (the emulation is not vacuous)."""
    layer = _layer([Stage("relu")], Quantization(0.05, 10, U8))
    wrong = Epilogue(*_fold_all(layer), [], None, None)
    with pytest.raises(AssertionError):
        _check(layer, wrong)


def _fold_all(layer: QuantizedLayer) -> tuple[np.ndarray, np.ndarray]:
    out = layer.output
    assert isinstance(out, Quantization) and layer.bias is not None
    return layer.weights.scales / np.float32(out.scale), layer.bias / np.float32(out.scale) + out.zero_point


def _kinds(ep: Epilogue) -> list[str]:
    return [NAMES[op[1]] if op[0] == "eltwise" else op[0] for op in ep.ops]


def _stage_reference(layer: QuantizedLayer, acc: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
    """The layer's arithmetic as its stages state it (the reference interpreter's)."""
    y = acc * np.float32(layer.input.scale) * layer.weights.scales.reshape(1, -1, 1, 1)  # type: ignore[union-attr]
    if layer.bias is not None:
        y = y + layer.bias.reshape(1, -1, 1, 1)
    for stage in layer.stages:
        y = stage.apply(y.astype(np.float32), [None, residual])
    return y if layer.output is None else layer.output.quantize(y)


def _as_onednn_runs(ep: Epilogue, layer: QuantizedLayer, acc: np.ndarray, residual: np.ndarray | None,
                    dst: np.dtype) -> np.ndarray:
    """The primitive's arithmetic: scaled accumulator plus bias, the post-ops in order, the destination scale,
    then the conversion to the destination type (rounding half to even, saturating)."""
    f = np.float32
    y = acc * f(layer.input.scale) * ep.weight_scales.reshape(1, -1, 1, 1)  # type: ignore[union-attr]
    if ep.bias is not None:
        y = y + ep.bias.reshape(1, -1, 1, 1)
    for op in ep.ops:
        if op[0] == "sum":
            y = y + f(op[1]) * (residual.astype(f) - f(op[2]))  # type: ignore[union-attr]
        elif op[0] == "binary":
            y = y * op[2] if op[1] == BINARY_MUL else y + op[2] if op[1] == BINARY_ADD else pytest.fail(op)
        elif NAMES[op[1]] == "linear":
            y = f(op[2]) * y + f(op[3])
        elif NAMES[op[1]] == "round":
            y = np.rint(y)
        elif NAMES[op[1]] == "clip":
            y = np.clip(y, f(op[2]), f(op[3]))
        elif NAMES[op[1]] == "relu":
            y = np.maximum(y, f(0))
        elif NAMES[op[1]] in ("gelu_erf", "gelu_tanh"):
            y = gelu(y, "ERF" if NAMES[op[1]] == "gelu_erf" else "TANH")
        else:
            pytest.fail(f"unexpected post-op {op}")
        y = y.astype(f)
    if ep.dst_scale is not None:
        y = y / f(ep.dst_scale)
    if dst == np.float32:
        return y
    info = np.iinfo(dst)
    return np.clip(np.rint(y), info.min, info.max).astype(dst)


def _agrees(layer: QuantizedLayer, dst: np.dtype = U8) -> Epilogue:
    ep = epilogue(layer, dst)
    assert ep is not None
    _check(layer, ep, dst)
    return ep


def _check(layer: QuantizedLayer, ep: Epilogue, dst: np.dtype = U8, residual_dtype: np.dtype = U8) -> None:
    rng = np.random.default_rng(1)
    acc = rng.integers(-40000, 40000, (2, CHANNELS, 16, 16)).astype(np.float32)
    info = np.iinfo(residual_dtype)
    residual = rng.integers(info.min, info.max + 1, acc.shape).astype(residual_dtype)
    want = _stage_reference(layer, acc, residual)
    got = _as_onednn_runs(ep, layer, acc, residual, dst)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    step = 1.0 if layer.output is not None else np.abs(want).max() / 100
    assert diff.max() <= step + 1e-6  # a float-rounding tie may land on the other integer
    assert np.mean(diff == 0) > 0.999 if layer.output is not None else np.allclose(got, want, rtol=1e-4, atol=1e-3)


def test_a_relu_before_a_u8_output_of_zero_point_0_is_the_outputs_saturation() -> None:
    ep = _agrees(_layer([Stage("relu")], Quantization(0.05, 0, U8)))
    assert ep.ops == [] and ep.dst_scale == pytest.approx(0.05)  # the output's scale: the destination's, as openvino


def test_a_relu_before_an_output_that_holds_negatives_clips_at_its_zero_point() -> None:
    ep = _agrees(_layer([Stage("relu")], Quantization(0.05, 10, U8)))
    assert _kinds(ep) == ["clip"] and ep.ops[0][2:] == (10.0, np.inf) and ep.dst_scale is None


def test_the_output_zero_point_goes_into_the_bias_of_a_layer_without_stages() -> None:
    ep = _agrees(_layer([], Quantization(0.05, 120, U8), bias=False))
    assert ep.ops == [] and ep.dst_scale is None and ep.bias is not None


def test_clamps_before_a_requantization_narrow_its_limits() -> None:
    grid = Quantization(0.04, 128, U8)
    ep = _agrees(_layer([Stage("clamp", low=-1.0, high=6.0), Stage("clamp", low=0.0, high=8.0),
                         Stage("requantize", quantization=grid)], None), dst=np.dtype(np.float32))
    assert _kinds(ep) == ["round", "clip", "linear"]  # its 1 / scale and zero point are in the weight scales
    assert ep.ops[1][2:] == (128.0, 255.0)  # clamp 0 -> grid 128; 6 / 0.04 + 128 = 278 saturates at 255


def test_a_relu_between_a_sum_and_an_output_zero_point_stays_and_the_scale_joins_the_shift() -> None:
    stages = [Stage("requantize", quantization=Quantization(0.01413, 123, U8)),
              Stage("sum", quantization=Quantization(0.07291, 121, U8), index=1), Stage("relu")]
    ep = _agrees(_layer(stages, Quantization(0.03967, 5, U8)))
    assert _kinds(ep) == ["round", "clip", "linear", "sum", "relu", "linear"] and ep.dst_scale is None


def test_a_relu_after_a_sum_into_a_u8_output_of_zero_point_0_is_dropped() -> None:
    stages = [Stage("requantize", quantization=Quantization(0.01413, 123, U8)),
              Stage("sum", quantization=Quantization(0.07291, 121, U8), index=1), Stage("relu")]
    ep = _agrees(_layer(stages, Quantization(0.03967, 0, U8)))
    assert _kinds(ep) == ["round", "clip", "linear", "sum"] and ep.dst_scale is None
    assert ep.residual == 1


def test_a_per_channel_requantization_goes_into_the_weight_scales() -> None:
    rng = np.random.default_rng(2)
    grid = ChannelQuantization.of((rng.random(CHANNELS) * 0.05 + 0.01).astype(np.float32),
                                  rng.integers(-5, 5, CHANNELS).astype(np.int32), S8)
    ep = _agrees(_layer([Stage("requantize", quantization=grid)], None), dst=np.dtype(np.float32))
    assert _kinds(ep) == ["round", "clip", "binary", "binary"]  # back from the grid: - zero points, * scales


def test_a_per_channel_output_is_folded_whole() -> None:
    rng = np.random.default_rng(3)
    out = ChannelQuantization.of((rng.random(CHANNELS) * 0.05 + 0.01).astype(np.float32),
                                 rng.integers(0, 20, CHANNELS).astype(np.int32), U8)
    ep = _agrees(_layer([], out))
    assert ep.ops == [] and ep.dst_scale is None


def test_a_clamp_the_output_does_not_cover_stays() -> None:
    ep = _agrees(_layer([Stage("clamp", low=0.0, high=6.0)], Quantization(0.1, -3, S8)), dst=S8)
    # the output's scale and zero point went into the weight scales and bias, so the clip's bounds follow them
    assert _kinds(ep) == ["clip"] and ep.ops[0][2:] == (-3.0, 57.0) and ep.dst_scale is None


def test_the_source_zero_point_as_a_bias_term_gives_the_same_layer() -> None:
    """``sum(w (x - z)) = sum(w x) - z sum(w)``: the primitive then takes no source zero point (oneDNN's AMX
    brgconv has none to take), and its output is the one with the zero point, up to float rounding."""
    rng = np.random.default_rng(4)
    w = rng.integers(-127, 128, (CHANNELS, 24)).astype(np.int8)
    x = rng.integers(0, 256, (300, 24)).astype(np.int64)
    layer = _layer([Stage("relu")], Quantization(0.05, 3, U8))
    layer.input = Quantization(0.02, 37, U8)
    ep = epilogue(layer, U8)
    assert ep is not None
    folded = ep.without_source_zero_point(layer, w.sum(axis=1, dtype=np.int64))
    assert folded.attributes(layer, 1)["zero_points"] == {ARG_SRC: 0}
    assert ep.attributes(layer, 1)["zero_points"] == {ARG_SRC: 37}

    def as_conv(acc: np.ndarray) -> np.ndarray:  # [rows, channels] as [1, channels, rows, 1]
        return acc.T.reshape(1, CHANNELS, -1, 1).astype(np.float32)

    want = _as_onednn_runs(ep, layer, as_conv((x - 37) @ w.T.astype(np.int64)), None, U8)
    got = _as_onednn_runs(folded, layer, as_conv(x @ w.T.astype(np.int64)), None, U8)
    diff = np.abs(got.astype(int) - want.astype(int))
    assert diff.max() <= 1 and np.mean(diff == 0) > 0.999
    plain = _layer([], None)  # its input's zero point is 3
    plain.input = Quantization(0.02, 0, U8)
    assert ep.without_source_zero_point(plain, w.sum(axis=1)) is ep  # none to fold


@pytest.mark.parametrize("mode", ["ERF", "TANH"])
def test_a_gelu_after_the_bias_is_a_post_op_before_the_output_quantization(mode) -> None:
    stages = [Stage("requantize", quantization=Quantization(0.01413, 123, U8)),
              Stage("add", operand=np.linspace(-0.3, 0.3, CHANNELS).astype(np.float32)), Stage("gelu", mode=mode)]
    ep = _agrees(_layer(stages, Quantization(0.02137, 9, U8)))
    assert _kinds(ep) == ["round", "clip", "linear", "binary", f"gelu_{mode.lower()}", "linear"]
