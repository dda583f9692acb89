"""vinerun.quantize: FakeQuantize placement, presets, ignored scope, ranges, bias correction."""

import numpy as np
import pytest

import vinerun as ov
from vinerun.quantization import QuantizationError
from vinerun.quantization.ranges import symmetric_range

RNG = np.random.default_rng(0)


def _cnn() -> ov.Model:
    """x -> Conv+bias -> ReLU -> MaxPool -> Conv+bias -> Add(residual) -> depthwise Conv -> AvgPool -> MatMul."""
    x = ov.opset1.parameter([1, 3, 8, 8], ov.Type.f32, name="x")
    w1 = RNG.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    c1 = ov.opset1.convolution(x, w1, [1, 1], [1, 1], [1, 1], [1, 1], name="conv1")
    b1 = ov.opset1.add(c1, RNG.standard_normal((1, 8, 1, 1)).astype(np.float32) * 0.1 + 0.2, name="bias1")
    r1 = ov.opset1.relu(b1, name="relu1")
    p1 = ov.opset1.max_pool(r1, [2, 2], [0, 0], [0, 0], [2, 2], name="pool1")
    w2 = RNG.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.1
    c2 = ov.opset1.convolution(p1, w2, [1, 1], [1, 1], [1, 1], [1, 1], name="conv2")
    a1 = ov.opset1.add(c2, p1, name="residual")
    wd = RNG.standard_normal((8, 1, 1, 3, 3)).astype(np.float32) * 0.3
    d1 = ov.opset1.group_convolution(a1, wd, [1, 1], [1, 1], [1, 1], [1, 1], name="dw")
    g = ov.opset1.avg_pool(d1, [1, 1], [0, 0], [0, 0], [4, 4], True, name="gap")
    f = ov.opset1.reshape(g, np.array([1, 8], np.int64), False, name="flatten")
    wm = RNG.standard_normal((8, 5)).astype(np.float32) * 0.3
    mm = ov.opset1.matmul(f, wm, False, False, name="fc")
    y = ov.opset1.add(mm, np.full(5, 0.3, np.float32), name="fc_bias")
    return ov.Model([y], [x], "cnn")


def _data(n: int = 8) -> ov.Dataset:
    return ov.Dataset([RNG.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(n)])


def _fqs(model: ov.Model) -> dict:
    return {n.friendly_name: n for n in model.get_ordered_ops() if n.type_name == "FakeQuantize"}


def _reader_types(fq) -> list:
    return sorted(i.get_node().type_name for i in fq.output(0).get_target_inputs())


def test_placement_follows_nncf_rules():
    q = ov.quantize(_cnn(), _data(), subset_size=8)
    fqs = _fqs(q)
    assert set(fqs) == {"x/fq_output_0", "conv1/fq_weights_1", "relu1/fq_output_0", "conv2/fq_weights_1",
                        "conv2/fq_output_0", "residual/fq_output_0", "dw/fq_weights_1", "dw/fq_output_0",
                        "gap/fq_output_0", "fc/fq_weights_1"}
    # the quantizer moved up through MaxPool to the ReLU, and serves both readers of the pool through it
    assert _reader_types(fqs["relu1/fq_output_0"]) == ["MaxPool"]
    assert _reader_types(fqs["gap/fq_output_0"]) == ["Reshape"]
    assert all(fq.levels == 256 for k, fq in fqs.items() if "weights" not in k)
    assert all(fq.levels == 255 for k, fq in fqs.items() if "weights" in k)


def test_scale_shift_readers_share_the_output_quantizer():
    """Hard-swish ``y * clip(y + 3, 0, 6)``: the quantizer the Multiply asks for on ``y`` also serves ``y + 3`` (a
    scale-shift), so it sits on the convolution's output, as NNCF places it; any other reader keeps it off."""
    rng = np.random.default_rng(7)  # its own draws: the module RNG feeds the other tests' data
    data = ov.Dataset([rng.standard_normal((1, 3, 8, 8)).astype(np.float32) for _ in range(8)])
    x = ov.opset1.parameter([1, 3, 8, 8], ov.Type.f32, name="x")
    w = rng.standard_normal((4, 3, 1, 1)).astype(np.float32)
    y = ov.opset1.convolution(x, w, [1, 1], [0, 0], [0, 0], [1, 1], name="conv")
    gate = ov.opset1.clamp(ov.opset1.add(y, np.float32(3), name="plus3"), 0.0, 6.0, name="clip")
    hswish = ov.opset1.multiply(y, gate, name="hswish")
    q = ov.quantize(ov.Model([hswish], [x]), data, subset_size=8)
    fqs = _fqs(q)
    assert "conv/fq_output_0" in fqs and not any(k.startswith("hswish/fq_input_0") for k in fqs)
    assert _reader_types(fqs["conv/fq_output_0"]) == ["Add", "Multiply"]
    assert _reader_types(fqs["clip/fq_output_0"]) == ["Multiply"]
    z = ov.opset1.relu(x, name="z")  # read by a Multiply that asks and by a Sigmoid (not a scale-shift)
    other = ov.Model([ov.opset1.multiply(z, ov.opset1.relu(x), name="mul"), ov.opset1.sigmoid(z)], [x])
    assert "mul/fq_input_0" in _fqs(ov.quantize(other, data, subset_size=8))


def test_weight_ranges_are_per_output_channel_and_symmetric():
    model = _cnn()
    fqs = _fqs(ov.quantize(model, _data(), subset_size=4))
    conv = fqs["conv1/fq_weights_1"]
    lo, hi = conv.const_input(1), conv.const_input(2)
    assert lo.shape == (8, 1, 1, 1) and np.array_equal(lo, -hi)
    w = conv.input_value(0).node.get_value()
    np.testing.assert_allclose(hi.ravel(), np.abs(w).reshape(8, -1).max(1), rtol=1e-6)
    assert fqs["fc/fq_weights_1"].const_input(1).shape == (1, 5)  # per column of [K, N]
    assert fqs["dw/fq_weights_1"].const_input(1).shape == (8, 1, 1, 1, 1)
    assert fqs["residual/fq_output_0"].const_input(1).shape == (1, 8, 1, 1)  # depthwise: per-channel activations


def test_presets_symmetric_and_asymmetric_activations():
    data = [RNG.standard_normal((1, 3, 8, 8)).astype(np.float32) + 0.5 for _ in range(6)]
    perf = _fqs(ov.quantize(_cnn(), data, preset="performance"))["x/fq_output_0"]
    mixed = _fqs(ov.quantize(_cnn(), data, preset=ov.QuantizationPreset.MIXED))["x/fq_output_0"]
    lo, hi = float(perf.const_input(1)), float(perf.const_input(2))
    assert lo == pytest.approx(-hi * 128 / 127)
    mlo, mhi = float(mixed.const_input(1)), float(mixed.const_input(2))
    assert mlo != pytest.approx(-mhi)
    scale = (mhi - mlo) / 255
    assert -mlo / scale == pytest.approx(round(-mlo / scale), abs=1e-3)  # zero sits on a level
    # ReLU outputs are unsigned in both presets
    assert float(_fqs(ov.quantize(_cnn(), data))["relu1/fq_output_0"].const_input(1)) == 0.0


def test_activation_range_is_mean_of_sample_extremes():
    data = [np.full((1, 3, 8, 8), v, np.float32) for v in (1.0, 3.0)]
    for d in data:
        d[0, 0, 0, 0] = -d.max()
    fq = _fqs(ov.quantize(_cnn(), data, fast_bias_correction=False))["x/fq_output_0"]
    assert float(fq.const_input(2)) == pytest.approx(2.0)
    assert symmetric_range(np.float32(0), np.float32(2), 256)[0] == 0


def test_ignored_scope_names_and_types():
    q = ov.quantize(_cnn(), _data(), ignored_scope=ov.IgnoredScope(names=["fc"], types=["Add"]))
    fqs = _fqs(q)
    assert "fc/fq_weights_1" not in fqs and "gap/fq_output_0" not in fqs
    assert "conv2/fq_output_0" not in fqs  # the residual Add asked for it
    with pytest.raises(QuantizationError, match="name 'nope'"):
        ov.quantize(_cnn(), _data(), ignored_scope=ov.IgnoredScope(names=["nope"]))


def test_input_model_unchanged_and_outputs_close():
    model = _cnn()
    before = len(model.get_ordered_ops())
    q = ov.quantize(model, _data(16))
    assert len(model.get_ordered_ops()) == before and len(model.outputs) == 1
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    ref = ov.Core().compile_model(model, "CPU")(x)[0]
    got = ov.Core().compile_model(q, "CPU")(x)[0]
    assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()


def test_fast_bias_correction_moves_the_mean_towards_float():
    rng = np.random.default_rng(7)
    x = ov.opset1.parameter([1, 16], ov.Type.f32, name="x")
    w = (rng.standard_normal((16, 4)) * 0.05 + 0.011).astype(np.float32)
    mm = ov.opset1.matmul(x, w, False, False, name="fc")
    model = ov.Model([ov.opset1.add(mm, np.full(4, 0.5, np.float32), name="bias")], [x])
    data = [(rng.random((1, 16)) * 4 + 2).astype(np.float32) for _ in range(32)]

    def mean_error(q):
        c, f = ov.Core().compile_model(q, "CPU"), ov.Core().compile_model(model, "CPU")
        return np.abs(np.mean([c(d)[0] - f(d)[0] for d in data], axis=0)).mean()

    with_bc = ov.quantize(model, data, fast_bias_correction=True)
    without = ov.quantize(model, data, fast_bias_correction=False)
    bias = [n for n in with_bc.get_ordered_ops() if n.friendly_name == "bias"][0]
    assert not np.allclose(bias.input_value(1).node.get_value(), 0.5)
    assert mean_error(with_bc) < mean_error(without)


def test_fast_bias_correction_leaves_exactly_quantized_weights_alone():
    """Weights on the 8-bit grid lose nothing: the bias stays, though the padded convolution's output mean differs
    from its output on the mean input (NNCF's form of the correction would move the bias by that border effect)."""
    rng = np.random.default_rng(3)
    x = ov.opset1.parameter([1, 2, 6, 6], ov.Type.f32, name="x")
    steps = rng.integers(-127, 128, (3, 2, 3, 3))
    steps[:, 0, 0, 0] = 127  # every output channel's largest step is 127: its scale is exactly 1 / 64
    conv = ov.opset1.convolution(x, (steps / 64).astype(np.float32), [1, 1], [1, 1], [1, 1], [1, 1], name="conv")
    bias = np.array([0.5, -0.25, 1.0], np.float32).reshape(1, 3, 1, 1)
    model = ov.Model([ov.opset1.relu(ov.opset1.add(conv, bias, name="bias"))], [x])
    data = [(rng.random((1, 2, 6, 6)) + 1).astype(np.float32) for _ in range(8)]
    q = ov.quantize(model, data, fast_bias_correction=True)
    corrected = [n for n in q.get_ordered_ops() if n.friendly_name == "bias"][0].input_value(1).node.get_value()
    np.testing.assert_allclose(corrected, bias, atol=1e-6)


def test_statistics_are_collected_in_f32():
    """On a CPU whose default precision is bf16 the statistics must still be f32 (as NNCF collects them)."""
    from vinerun.quantization.statistics import collect_statistics

    x = ov.opset1.parameter([1, 8], ov.Type.f32, name="x")
    scaled = ov.opset1.matmul(x, np.eye(8, dtype=np.float32) * 3, False, False, name="scaled")  # bf16 on such CPUs
    model = ov.Model([ov.opset1.relu(scaled)], [x])
    sample = np.array([[1 + 2.0 ** -12, 2, 3, 4, 5, 6, 7, 8.0078125]], np.float32)
    st = collect_statistics(model, [scaled.output(0)], ov.Dataset([sample]), 1, show_progress=False)[0]
    assert float(st.max) == float(np.float32(8.0078125) * 3) and float(st.min) == float(np.float32(1 + 2.0 ** -12) * 3)


def test_errors_name_the_problem():
    with pytest.raises(QuantizationError, match="subset_size"):
        ov.quantize(_cnn(), _data(), subset_size=0)
    with pytest.raises(QuantizationError, match="preset"):
        ov.quantize(_cnn(), _data(), preset="fast")
    with pytest.raises(QuantizationError, match="no samples"):
        ov.quantize(_cnn(), [])
    with pytest.raises(QuantizationError, match="calibration sample 0"):
        ov.quantize(_cnn(), [np.zeros((1, 5), np.float32)])


def test_dataset_transform_and_indices():
    ds = ov.Dataset(range(5), lambda i: {"x": np.full((1, 3, 8, 8), i, np.float32)})
    assert [float(d["x"].max()) for d in ds.get_inference_data([1, 3])] == [1.0, 3.0]
    assert ds.get_length() == 5
