"""GNA integer primitives against hand-computed cases (specs/gna.md §2 and checklist item 7)."""

import numpy as np
import pytest

from vinerun.errors import ValidationError
from vinerun.plugins.gna import arith


def test_round_half_away_from_zero_on_ties():
    x = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49, -0.49, 2.51, -2.51, 0.0])
    assert arith.round_half_away(x).tolist() == [1, -1, 2, -2, 3, -3, 0, 0, 3, -3, 0]


def test_round_half_away_differs_from_numpy_banker_rounding():
    x = np.array([0.5, 2.5, -2.5])
    assert np.round(x).tolist() == [0.0, 2.0, -2.0]
    assert arith.round_half_away(x).tolist() == [1, 3, -3]


def test_saturation_bounds_per_width():
    x = np.array([-(2**40), -129, -128, 127, 128, 2**40])
    assert arith.saturate(x, 8).tolist() == [-128, -128, -128, 127, 127, 127]
    assert arith.saturate(x, 16).tolist() == [-32768, -129, -128, 127, 128, 32767]
    assert arith.saturate(x, 32).tolist() == [-(2**31), -129, -128, 127, 128, 2**31 - 1]
    assert arith.saturate(x, 16).dtype == np.int16
    with pytest.raises(ValidationError, match="8, 16 or 32"):
        arith.saturate(x, 12)


def test_input_quantization_rounds_then_saturates_to_int16():
    # s = 4: 0.125*4 = 0.5 -> 1; -0.375*4 = -1.5 -> -2; 10000*4 -> 32767; -10000*4 -> -32768
    x = np.array([0.125, -0.125, -0.375, 0.1, 10000.0, -10000.0, 8191.875])
    assert arith.quantize_input(x, 4.0).tolist() == [1, -1, -2, 0, 32767, -32768, 32767]
    assert arith.quantize_input(x, 4.0).dtype == np.int16


def test_input_quantization_rejects_zero_and_infinite_scale():
    for bad in (0.0, float("inf"), -float("inf")):
        with pytest.raises(ValidationError, match="0.0f or \\+-inf"):
            arith.quantize_input(np.zeros(2), bad)


def test_output_dequantization():
    assert arith.dequantize(np.array([2048, -1024, 3]), 2048.0).tolist() == [1.0, -0.5, 3 / 2048]


def test_affine_hand_computed_with_bias():
    x = np.array([[1, 2, 3]], dtype=np.int16)
    w = np.array([[1, -1, 2], [100, 200, 300]], dtype=np.int16)
    b = np.array([10, -5], dtype=np.int32)
    # row 0: 10 + 1 - 2 + 6 = 15; row 1: -5 + 100 + 400 + 900 = 1395
    assert arith.affine(x, w, b).tolist() == [[15, 1395]]


def test_affine_saturates_to_int32_at_the_end():
    x = np.full((1, 4), 32767, dtype=np.int16)
    w = np.full((1, 4), 32767, dtype=np.int16)
    assert arith.affine(x, w).tolist() == [[2**31 - 1]]
    assert arith.affine(x, -w).tolist() == [[-(2**31)]]


def test_chunked_accumulation_saturates_between_chunks():
    # products: +1e9, +1e9, +1e9, -1e9  (x = 31250 * w = 32000)
    x = np.array([[31250, 31250, 31250, 31250]], dtype=np.int16)
    w = np.array([[32000, 32000, 32000, -32000]], dtype=np.int16)
    # one pass (int64): 2e9 fits int32 -> 2000000000
    assert arith.affine(x, w).tolist() == [[2_000_000_000]]
    # chunks of 2: 2e9 (kept) ; + (1e9 - 1e9) = 2e9
    assert arith.affine(x, w, chunk=2).tolist() == [[2_000_000_000]]
    # chunks of 1: 1e9, 2e9, 3e9 -> saturates to 2147483647, then -1e9 -> 1147483647
    assert arith.affine(x, w, chunk=1).tolist() == [[2147483647 - 1_000_000_000]]
    # chunks of 3: 3e9 -> 2147483647, then -1e9
    assert arith.affine(x, w, chunk=3).tolist() == [[1147483647]]


def test_chunked_accumulation_starts_from_the_bias():
    x = np.array([[32767, 32767]], dtype=np.int16)
    w = np.array([[32767, -32767]], dtype=np.int16)
    b = np.array([2**31 - 100], dtype=np.int32)
    # chunk 1: bias + 1073676289 saturates to INT32_MAX, then -1073676289
    assert arith.affine(x, w, b, chunk=1).tolist() == [[2**31 - 1 - 1073676289]]
    assert arith.affine(x, w, b).tolist() == [[2**31 - 100]]


def test_i8_row_multipliers_scale_each_row_sum():
    x = np.array([[100, -50]], dtype=np.int16)
    w = np.array([[127, 3], [-128, 1]], dtype=np.int8)
    m = np.array([2, 230])
    b = np.array([1, 0])
    # row 0: 1 + 2*(12700 - 150) = 25101; row 1: 230*(-12800 - 50) = -2955500
    assert arith.affine(x, w, b, multipliers=m).tolist() == [[25101, -2955500]]


def test_affine_batch_rows_are_independent():
    x = np.array([[1, 0], [0, 1], [2, 2]], dtype=np.int16)
    w = np.array([[3, 5]], dtype=np.int16)
    assert arith.affine(x, w).tolist() == [[3], [5], [16]]


def test_affine_shape_mismatch_names_shapes():
    with pytest.raises(ValidationError, match=r"\(1, 3\).*\(2, 2\)"):
        arith.affine(np.zeros((1, 3)), np.zeros((2, 2)))


def test_diagonal_saturates():
    x = np.array([32767, -32768, 3])
    w = np.array([32767, 32767, -2])
    b = np.array([2**31 - 1, 0, 1])
    assert arith.diagonal(x, w, b).tolist() == [2**31 - 1, -1073709056, -5]


def test_accumulation_chunks_per_target_and_batch():
    assert [arith.accumulation_chunk("GNA_TARGET_2_0", g) for g in range(1, 9)] == [
        12288, 6144, 4032, 3072, 2400, 2016, 1728, 1536]
    # 3.x: floor(4096/(16g)) * (8*16/bytes) * g / g
    assert arith.buffer_elements("GNA_TARGET_3_0", 1) == 256 * 64
    assert arith.accumulation_chunk("GNA_TARGET_3_0", 3) == 85 * 64
    assert arith.accumulation_chunk("GNA_TARGET_3_5", 1, input_bytes=1) == 256 * 128
    with pytest.raises(ValidationError, match="1..8"):
        arith.accumulation_chunk("GNA_TARGET_2_0", 9)


def test_affine_matches_int64_reference_on_random_data():
    rng = np.random.default_rng(0)
    x = rng.integers(-32768, 32767, size=(3, 700)).astype(np.int16)
    w = rng.integers(-32768, 32767, size=(5, 700)).astype(np.int16)
    b = rng.integers(-(2**31), 2**31 - 1, size=5).astype(np.int32)
    chunk = 64
    ref = np.tile(b.astype(np.int64), (3, 1))
    for s in range(0, 700, chunk):
        part = x[:, s:s + chunk].astype(np.int64) @ w[:, s:s + chunk].astype(np.int64).T
        ref = np.clip(ref + part, -(2**31), 2**31 - 1)
    assert np.array_equal(arith.affine(x, w, b, chunk=chunk), ref.astype(np.int32))


def test_prepacked_float64_weights_give_the_same_result():
    rng = np.random.default_rng(2)
    x = rng.integers(-32768, 32767, size=(2, 40)).astype(np.int16)
    w = rng.integers(-32768, 32767, size=(3, 40)).astype(np.int16)
    assert np.array_equal(arith.affine(x, w, chunk=7), arith.affine(x, w.astype(np.float64), chunk=7))


@pytest.mark.parametrize("name", ["arith", "quantize", "scales", "pwl", "pwl_functions", "pwl_segments"])
def test_docstring_examples(name):
    import doctest
    import importlib

    module = importlib.import_module(f"vinerun.plugins.gna.{name}")
    result = doctest.testmod(module, extraglobs={"np": np, "math": __import__("math")})
    assert result.failed == 0 and result.attempted > 0
