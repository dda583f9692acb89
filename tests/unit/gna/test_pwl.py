"""GNA PWL: hardware segment evaluation on chosen points, quantization of segments, and designs that
meet pwl_max_error_percent over each activation's domain (specs/gna.md §3)."""

import math

import numpy as np
import pytest

from vinerun.errors import UnsupportedOpError, ValidationError
from vinerun.plugins.gna import pwl
from vinerun.plugins.gna.pwl_functions import Segment, curved, exact, power
from vinerun.plugins.gna.pwl_segments import HwSegments, evaluate, quantize_segments, quantize_slope

INT32_MAX = 2**31 - 1


def _hw(xb, yb, sl):
    return HwSegments(np.array(xb, np.int32), np.array(yb, np.int16), np.array(sl, np.int16))


# seg0: xb -100, shift 8, flat -50; seg1: xb 0, shift 8, slope 32767; seg2: xb 400, shift 24, slope -1000, y 1000
HAND = _hw([-100, 0 | 0, 400 | 2], [-50, 0, 1000], [0, 32767, -1000])


@pytest.mark.parametrize(("x", "y"), [
    (-(2**31), -50),  # x <= xb_0: yBase_0
    (-100, -50),
    (-1, -50),  # k = 0: (99 * 0 >> 8) - 50
    (0, 0),
    (100, 12799),  # 100 * 32767 >> 8 = 3276700 / 256 = 12799.6 -> 12799
    (300, 32767),  # 38399 saturates to int16
    (400, 1000),
    (401, 999),  # (1 * -1000) >> 24 = -1: arithmetic shift floors (truncation would give 1000)
    (400 + 2**24, 0),  # -1000 + 1000
    (INT32_MAX, -32768),  # -127999.97 -> -128000 + 1000 saturates
])
def test_hardware_evaluation_on_chosen_points(x, y):
    assert evaluate(np.array([x]), HAND).tolist() == [y]


def test_hardware_evaluation_int32_output_and_shift_32():
    assert evaluate(np.array([INT32_MAX]), HAND, out_bits=32).tolist() == [-127000]
    hw = _hw([0 | 3], [5], [16384])  # shift 32
    assert hw.shifts.tolist() == [32]
    assert evaluate(np.array([2**20, 2**18 - 1]), hw).tolist() == [9, 5]  # 2^34 >> 32 = 4; 2^32-2^14 >> 32 = 0


def test_segments_must_be_ascending_and_at_most_128():
    with pytest.raises(ValidationError, match="ascending"):
        _hw([8, 4], [0, 0], [0, 0])
    with pytest.raises(ValidationError, match="1..128"):
        _hw(list(range(0, 4 * 129, 4)), [0] * 129, [0] * 129)


def test_slope_index_is_the_largest_that_fits():
    assert quantize_slope(0.25) == (16384, 16)  # 0.25 * 2^32, 2^24 overflow; 2^16 fits
    assert quantize_slope(0.001) == (16777, 24)
    assert quantize_slope(1e-6) == (4295, 32)
    assert quantize_slope(2.0) == (512, 8)
    assert quantize_slope(-200.0) == (-32768, 8)  # saturates


def test_quantizing_a_float_segment_hand_computed():
    # s = 0.2 * 2048 / 100 = 4.096 -> index 0: round(1048.576) = 1049; xBase = trunc(130) & ~3 = 128;
    # yBase = round((0.2 * 1.3 + 0.4) * 2048) = round(1351.68) = 1352
    hw = quantize_segments([Segment(-math.inf, 0.0, 0.0), Segment(1.3, 0.2, 0.4)], s_in=100.0, s_out=2048.0)
    assert hw.x_base.tolist()[1] == 128 and hw.slope.tolist()[1] == 1049 and hw.y_base.tolist()[1] == 1352
    assert hw.x_base.tolist()[0] == -(2**31) | 3  # flat first segment from the int32 minimum


def test_relu_clamp_abs_sign_exact_segments():
    relu = quantize_segments(exact("relu"), 4.0, 8.0)
    assert evaluate(np.array([-1000, -1, 0, 3, 4000, 10**6]), relu).tolist() == [0, 0, 0, 6, 8000, 32767]
    clamp = quantize_segments(exact("clamp", lo=-2.0, hi=2.0), 64.0, 64.0)
    assert evaluate(np.array([-1000, -128, -64, 0, 100, 128, 1000]), clamp).tolist() == [
        -128, -128, -64, 0, 100, 128, 128]
    absf = quantize_segments(exact("abs"), 1.0, 1.0)
    assert evaluate(np.array([-7, 0, 7, 40000]), absf).tolist() == [7, 0, 7, 32767]
    sign = quantize_segments(exact("sign"), 1.0, 2048.0)
    # x_q in 1..3 lands on the 0 segment: starts are multiples of 4
    assert evaluate(np.array([-5, -1, 0, 4, 100]), sign).tolist() == [-2048, -2048, 0, 2048, 2048]


def test_leaky_relu_first_segment_starts_where_int16_saturates():
    hw = quantize_segments(exact("leaky_relu", alpha=0.1), 1.0, 1.0)
    assert hw.y_base.tolist()[0] == -32768
    x = np.arange(-300000, 0, 997)
    np.testing.assert_allclose(evaluate(x, hw), 0.1 * x, atol=3)


def test_unknown_activation():
    with pytest.raises(UnsupportedOpError, match="gelu"):
        curved("gelu")
    with pytest.raises(UnsupportedOpError, match="gelu"):
        exact("gelu")


CURVED = ["sigmoid", "tanh", "softsign", "exp", "log", "neglog", "neghalflog"]
FUNCS = [curved(n) for n in CURVED] + [power(2.0), power(3.0), power(0.5)]


CASES = ([(f, 1.0) for f in FUNCS] + [(curved(n), 0.1) for n in ("sigmoid", "tanh", "log")]
         + [(power(3.0), 0.1), (curved("exp"), 5.0)])


@pytest.mark.parametrize(("f", "pct"), CASES, ids=lambda v: getattr(v, "name", v))
def test_recursive_descent_meets_max_error_over_the_domain(f, pct):
    segs = pwl.design(f, pct)
    assert len(segs) <= 128
    assert pwl.error_percent(f, segs) <= pct
    # one flat saturating segment at each end
    assert segs[0].m == 0 and segs[-1].m == 0 and segs[-1].alpha == f.hi


@pytest.mark.parametrize("f", FUNCS, ids=lambda f: f.name)
def test_quantized_design_stays_within_error_plus_quantization(f):
    segs = pwl.design(f, 1.0)
    s_in = 2.0**16
    f_max = float(np.max(np.abs(f.f(np.linspace(f.lo, f.hi, 10001)))))
    s_out = min(2048.0, 32767.0 / f_max)
    hw = quantize_segments(segs, s_in, s_out)
    # int16 output and multiple-of-4 segment starts add a little to the design's error
    assert pwl.hw_error_percent(f, hw, s_in, s_out) <= 1.0 + 0.1


def test_tighter_error_needs_more_segments():
    f = curved("tanh")
    counts = [len(pwl.design(f, p)) for p in (2.0, 1.0, 0.1)]
    assert counts == sorted(counts) and counts[0] < counts[-1]


def test_lines_meet_at_breakpoints_inside_a_piece():
    f = curved("sigmoid")
    segs = pwl.design(f, 0.5)
    for prev, seg in zip(segs[1:-2], segs[2:-1], strict=True):
        if prev.alpha < 0 <= seg.alpha and seg.alpha == 0:
            continue  # the split point between the convex and the concave half
        assert prev.value(seg.alpha) == pytest.approx(seg.value(seg.alpha), abs=1e-9)


def test_error_measure_is_honest():
    f = curved("sigmoid")
    flat = [Segment(-math.inf, 0.0, 0.5)]
    assert pwl.error_percent(f, flat) == pytest.approx(50.0, abs=0.01)


def test_design_that_cannot_converge_fails_with_the_original_message():
    with pytest.raises(ValidationError, match="Failed to converge in pwl_search!"):
        pwl.design("log", 0.0001)
    with pytest.raises(ValidationError, match="pwl_max_error_percent"):
        pwl.design("tanh", 0.0)


def test_uniform_distribution_has_65_segments():
    f = curved("sigmoid")
    segs = pwl.design(f, algorithm=pwl.UNIFORM_DISTRIBUTION)
    assert len(segs) == 65
    assert pwl.error_percent(f, segs) < 1.0
    with pytest.raises(ValidationError, match="design algorithm"):
        pwl.design(f, algorithm="GREEDY")


def test_power_exponents_zero_and_one_are_exact():
    with pytest.raises(ValidationError, match="not curved"):
        power(1.0)
    hw = quantize_segments(exact("power", exponent=0.0), 1.0, 100.0)
    assert evaluate(np.array([-5, 0, 5]), hw).tolist() == [100, 100, 100]
