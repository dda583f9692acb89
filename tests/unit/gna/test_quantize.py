"""GNA scale factors and weight/bias quantization against hand-computed cases (specs/gna.md §2)."""

import numpy as np
import pytest

from vinerun.errors import ValidationError
from vinerun.plugins.gna import arith, quantize, scales


def test_input_scale_order_fake_quantize_then_user_then_default():
    assert quantize.input_scale((-1.0, 1.0, 65536), user=7.0) == pytest.approx(65535 / 2)
    assert quantize.input_scale((-1.0, 1.0, 100000)) == pytest.approx(65535 / 2)  # levels capped
    assert quantize.input_scale(None, user=7.0) == 7.0
    assert quantize.input_scale() == 1.0
    with pytest.raises(ValidationError, match="0.0f or \\+-inf"):
        quantize.input_scale(None, user=0.0)


def test_sample_input_scale():
    assert quantize.sample_input_scale(np.array([[0.5, -2.0]])) == 8192.0
    assert quantize.sample_input_scale(np.zeros(3)) == 1.0


def test_i16_weights_without_bias():
    w = np.array([[0.5, -0.25], [0.125, 0.0]])
    q = quantize.quantize_affine(w, None, s_in=4.0)
    # s_w = 16384 / 0.5 = 32768
    assert q.s_w == 32768.0 and q.s_out == 131072.0
    assert q.weights.tolist() == [[16384, -8192], [4096, 0]]
    assert q.weights.dtype == np.int16 and q.biases.tolist() == [0, 0] and q.multipliers is None


def test_i16_bias_caps_the_weight_scale():
    # s_w = 16384; s_w*s_in = 16384*1e5 = 1.6384e9; 2^30/max|b| = 2^30/2 = 536870912 -> s_b wins
    w = np.array([[1.0, -0.5]])
    b = np.array([2.0])
    q = quantize.quantize_affine(w, b, s_in=1e5)
    assert q.s_out == pytest.approx(2**29)
    assert q.s_w == pytest.approx(2**29 / 1e5)
    assert q.biases.tolist() == [2**30]
    assert q.weights.tolist() == [[5369, -2684]]  # 5368.70912 -> 5369, -2684.35456 -> -2684


def test_bias_rounding_half_away_and_int32_saturation():
    q = quantize.quantize_affine(np.array([[1.0], [1.0]]), None, s_in=1.0, s_w=2.0)
    assert q.weights.tolist() == [[2], [2]]
    q = quantize.quantize_affine(np.array([[1.0], [1.0]]), np.array([1.25, -1.25]), s_in=1.0, s_w=2.0)
    assert q.biases.tolist() == [3, -3]  # 2.5 -> 3, -2.5 -> -3
    q = quantize.quantize_affine(np.array([[1.0]]), np.array([1e12]), s_in=1.0, s_w=2.0)
    assert q.biases.tolist() == [2**31 - 1]


def test_all_zero_weights_get_scale_one():
    q = quantize.quantize_affine(np.zeros((2, 3)), None, s_in=2.0)
    assert q.s_w == 1.0 and not q.weights.any()


def test_i8_row_multipliers_hand_computed():
    # s_w = 127/1.0 * 230 = 29210; row maxima |w*s_w| = 29210, 2921, 14.605
    w = np.array([[1.0, -0.5], [0.1, 0.05], [0.0005, 0.0]])
    q = quantize.quantize_affine(w, None, s_in=1.0, precision="i8")
    assert q.s_w == pytest.approx(29210.0)
    # m = (int)(row_max/127 + 0.5): 230.5 -> 230, 23.5 -> 23, 0.615 -> 1
    assert q.multipliers.tolist() == [230, 23, 1]
    # w_q = round(w*s_w/m): 127, -63.5 -> -64; 127, 63.5 -> 64; 14.605 -> 15, 0
    assert q.weights.tolist() == [[127, -64], [127, 64], [15, 0]]
    assert q.weights.dtype == np.int8


def test_i8_multiplier_above_230_is_an_error():
    with pytest.raises(ValidationError, match="multiplier 231"):
        quantize.row_multipliers(np.array([[1.0]]), s_w=127 * 230.6)
    assert quantize.row_multipliers(np.array([[0.0, 0.0]]), s_w=5.0).tolist() == [1]


def test_i8_affine_output_matches_the_float_product():
    rng = np.random.default_rng(1)
    w = rng.normal(size=(4, 16))
    x = rng.normal(size=(1, 16))
    s_in = quantize.sample_input_scale(x)
    q = quantize.quantize_affine(w, None, s_in, precision="i8")
    y = arith.affine(arith.quantize_input(x, s_in), q.weights, q.biases, multipliers=q.multipliers)
    np.testing.assert_allclose(y / q.s_out, x @ w.T, atol=0.02)


def test_i8_scale_reduction_thresholds():
    big = 2**31 - 1
    s_in = 1.0
    assert quantize.reduce_i8_weight_scale(10.0 * big, s_in) == 10.0 * big  # below 30x
    assert quantize.reduce_i8_weight_scale(50.0 * big, s_in) == 25.0 * big  # r < 100: x0.5
    assert quantize.reduce_i8_weight_scale(120.0 * big, s_in) == pytest.approx(54.0 * big)  # x0.45
    assert quantize.reduce_i8_weight_scale(180.0 * big, s_in) == pytest.approx(72.0 * big)  # x0.40
    assert quantize.reduce_i8_weight_scale(400.0 * big, s_in) == pytest.approx(140.0 * big)  # x0.35


def test_unsupported_precision_message():
    with pytest.raises(ValidationError, match="should be i16 or i8, but was: i4"):
        quantize.quantize_affine(np.ones((1, 1)), None, 1.0, precision="i4")


def test_fake_quantize_weight_scale():
    assert quantize.fake_quantize_weight_scale(np.array([-1.0, -2.0]), np.array([1.0, 2.0]), 65536) == 65535 / 4
    assert quantize.fake_quantize_weight_scale(np.array([-1.0]), np.array([1.0]), 255) == pytest.approx(127 * 230)


def test_const_scale():
    assert quantize.const_scale(np.array([0.5, -2.0])) == 32767 / 2
    assert quantize.const_scale(np.array([0.5, -2.0]), int8=True) == 63.5


def test_activation_output_scales():
    assert scales.activation_output_scale("sigmoid", 1000.0) == 2048.0
    assert scales.activation_output_scale("tanh", 1000.0, int8_input=True) == 4.0
    assert scales.activation_output_scale("relu", 1000.0) == 2048.0
    assert scales.activation_output_scale("relu", 2.0**21) == 1024.0  # 2048 * 2^21 overflows int32
    assert scales.activation_output_scale("power", 1.0, max_abs_f=4096.0) == 32767 / 4096
    # identity: of 2049 and 1024.5, the scale whose int16 slope represents 1 best
    s = scales.activation_output_scale("identity", 16384.0)
    assert s in scales.IDENTITY_SCALES
    assert scales.slope_error(1.0, 16384.0, s) == min(scales.slope_error(1.0, 16384.0, c)
                                                      for c in scales.IDENTITY_SCALES)
    # s_in = 1e6: 2049/1e6 -> 134 * 2^-16 (error 2e-3); 1024.5/1e6 -> 17188 * 2^-24 (error 1.5e-5)
    assert scales.activation_output_scale("identity", 1e6) == 1024.5


def test_eltwise_add_as_diagonal():
    d = scales.add_as_diagonal(2048.0, 2048.0 * 8)
    assert (d.weight, d.s_out, d.requantize_b) == (8, 16384.0, False)
    assert scales.add_as_diagonal(2048.0, 2048.0 * 8, subtract=True).weight == -8
    d = scales.add_as_diagonal(10.0, 10.0 * 200, int8=True)
    assert (d.weight, d.s_b, d.requantize_b) == (127, 1270.0, True)
    assert scales.add_as_diagonal(4.0, 10.0).weight == 3  # 2.5 rounds away from zero


def test_affine_and_mul_scales():
    assert scales.affine_output_scale(16384.0, 2.0) == 32768.0
    assert scales.mul_output_scale(2048.0, 3.0) == 6144.0
    assert scales.reduce_for_output_stats(4.0, 2.0, max_abs_out=2**31 - 1) == 0.5


def test_concat_common_scale_and_failure_message():
    C = scales.ConcatInput
    assert scales.concat_scale([C(2048.0, "activation"), C(16.0, "input")]) == 16.0
    assert scales.concat_scale([C(2048.0, "activation"), C(1.0, "const"), C(300.0, "memory")]) == 300.0
    assert scales.concat_scale([C(2048.0, "activation"), C(300.0, "memory")], fake_quantized=True) == 300.0
    assert scales.concat_scale([C(5.0, "activation"), C(5.0, "activation")]) == 5.0
    scales.check_concat([C(5.0), C(5.0)], 5.0)
    with pytest.raises(ValidationError, match="layers entered into concat have different scale factors"):
        scales.check_concat([C(5.0), C(6.0)], 5.0)


def test_memory_pair_scale():
    assert scales.memory_scale(2048.0, 2048.0) == (2048.0, False)
    assert scales.memory_scale(1.0, 2048.0) == (2048.0, True)
