"""Small f32 <-> bf16 conversions and small bf16 arithmetic run as NumPy casts and ufuncs (ml_dtypes) instead of
ATen: bit-identical to ATen's results (the kernels' large-array path), NaN kept NaN, no warnings."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
import torch

from vinerun.ir.core_ops import Parameter
from vinerun.ir.types import Type
from vinerun.ops.arithmetic import Add, Maximum, Multiply, Subtract
from vinerun.ops.convert import Convert
from vinerun.plugins.cpu.kernels import elementwise, select_kernel
from vinerun.plugins.cpu.kernels._torch import to_numpy, to_torch

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(11)


def awkward_f32(n: int) -> np.ndarray:
    """Random bit patterns: every exponent, subnormals, infinities, NaNs, rounding ties."""
    bits = RNG.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    bits[: n // 8] = (bits[: n // 8] & 0xFFFF0000) | 0x8000  # exact ties between two bf16 values
    return bits.view(np.float32)


def same_bits_or_both_nan(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.astype(np.float32), want.astype(np.float32)
    nan = np.isnan(w)
    np.testing.assert_array_equal(np.isnan(g), nan)
    bits = np.uint16 if got.dtype == BF16 else np.uint32
    np.testing.assert_array_equal(got.view(bits)[~nan], want.view(bits)[~nan])


@pytest.mark.parametrize("n", [1, 256, elementwise.SMALL_TO_BF16])
def test_small_f32_to_bf16_rounds_as_aten(n):
    x = awkward_f32(n)
    kernel = select_kernel(Convert(Parameter(Type.f32, [-1]), destination_type=Type.bf16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ml_dtypes warns on a NaN cast unless told not to
        got = kernel.fn([x])[0]
    same_bits_or_both_nan(got, to_numpy(to_torch(x).to(torch.bfloat16)))


@pytest.mark.parametrize("n", [3, 4096, elementwise.SMALL_FROM_BF16 + 1])
def test_bf16_to_f32_is_exact_at_every_size(n):
    x = RNG.integers(0, 2**16, size=n, dtype=np.uint32).astype(np.uint16).view(BF16)
    kernel = select_kernel(Convert(Parameter(Type.bf16, [-1]), destination_type=Type.f32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = kernel.fn([x])[0]
    same_bits_or_both_nan(got, to_numpy(to_torch(x).to(torch.float32)))


@pytest.mark.parametrize("op, aten", [(Add, torch.add), (Subtract, torch.sub), (Multiply, torch.mul),
                                      (Maximum, torch.maximum)])
@pytest.mark.parametrize("shapes", [((1, 1, 256), (1, 1, 256)), ((4, 64), (64,)), ((2048,), ())])
def test_small_bf16_arithmetic_matches_aten(op, aten, shapes):
    a, b = (RNG.standard_normal(s).astype(np.float32) * 10.0 ** RNG.uniform(-20, 20, s) for s in shapes)
    a, b = np.asarray(a, BF16), np.asarray(b, BF16)
    node = op(*(Parameter(Type.bf16, [-1] * len(s)) for s in shapes))  # dynamic: the NumPy / ATen kernel
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith("aten_")
    got = kernel.fn([a, b])[0]
    same_bits_or_both_nan(np.asarray(got), to_numpy(aten(to_torch(a), to_torch(b))))
