"""GPU FakeQuantize / QuantizeLinear / DequantizeLinear kernels against the NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.plugins_gpu._check import CPU, check, param, rand
from vinerun.ir.types import Type
from vinerun.ops.fake_quantize import FakeQuantize
from vinerun.ops.quantization import DequantizeLinear, QuantizeLinear
from vinerun.plugins.gpu.kernels import select_kernel, to_device, to_host


def _fq_inputs(et: str, shape: list[int], ranges: list[list[int]]) -> tuple[list, list]:
    """``x`` and four range operands (``input_low`` ``[-2..]``, ``input_high`` ``[2..]``, output ``[-1, 3]``)."""
    rng = np.random.default_rng(1)
    dtype = np.float16 if et == "f16" else np.float32
    lo = -rng.uniform(1, 2, ranges[0]).astype(dtype)
    hi = rng.uniform(1, 2, ranges[1]).astype(dtype)
    values = [rand(et, shape, 0, -3, 3), lo, hi, np.asarray(-1, dtype), np.asarray(3, dtype)]
    return [param(et, list(np.shape(v))) for v in values], values


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("ranges", [[[], []], [[1, 4, 1, 1], [1, 4, 1, 1]]], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize("levels", [256, 255, 16])
def test_fake_quantize(et: str, ranges: list[list[int]], levels: int) -> None:
    params, values = _fq_inputs(et, [2, 4, 5, 6], ranges)
    node = FakeQuantize(*params, levels=levels)
    # the kernel computes in f32 where the reference uses f64 (a level flip needs a value within an f32 ulp of
    # a midpoint: none in these inputs); f16 results round once more
    check(node, values, **({"rtol": 1e-3, "atol": 2e-3} if et == "f16" else {"rtol": 1e-6, "atol": 1e-6}))


@pytest.mark.parametrize("dst", ["u8", "i8", "i16", "i32"])
@pytest.mark.parametrize("per_axis", [False, True])
def test_quantize_linear(dst: str, per_axis: bool) -> None:
    dtype = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32}[dst]
    scale = np.array([0.02, 0.05, 0.1], np.float32) if per_axis else np.array(0.03, np.float32)
    zp = np.full(scale.shape, 3 if dst != "u8" else 120, dtype)
    x = rand("f32", [2, 3, 7], 0, -9, 9)
    x[0, 0, :3] = [0.01 * 2.5, 0.02 * 3.5, -0.02 * 0.5]  # ties: half to even as the reference
    node = QuantizeLinear(param("f32", [2, 3, 7]), param("f32", list(scale.shape)), param(dst, list(zp.shape)),
                          axis=1)
    check(node, [x, scale, zp])


def test_quantize_linear_without_zero_point_uses_output_type() -> None:
    node = QuantizeLinear(param("f32", [4, 5]), param("f32", []), output_type=Type.i8)
    check(node, [rand("f32", [4, 5], 2, -9, 9), np.array(0.05, np.float32)])


@pytest.mark.parametrize("src", ["u8", "i8", "i32"])
@pytest.mark.parametrize("out", ["f32", "f16"])
def test_dequantize_linear(src: str, out: str) -> None:
    dtype = {"u8": np.uint8, "i8": np.int8, "i32": np.int32}[src]
    scale = np.array([0.02, 0.05, 0.1, 0.3], np.float16 if out == "f16" else np.float32)
    zp = np.array([1, 2, 3, 4], dtype)
    node = DequantizeLinear(param(src, [3, 4]), param(out, [4]), param(src, [4]), axis=-1)
    check(node, [rand(src, [3, 4], 3), scale, zp])


def test_blocked_and_float8_run_on_the_host() -> None:
    blocked = DequantizeLinear(param("i8", [4, 6]), param("f32", [4, 2]), axis=1, block_size=3)
    assert select_kernel(blocked, CPU).exec_type == "host_ref"
    f8 = QuantizeLinear(param("f32", [4]), param("f32", []), output_type=Type.f8e4m3)
    assert select_kernel(f8, CPU).exec_type == "host_ref"


def test_quantize_then_dequantize_round_trip_matches_fake_quantize_grid() -> None:
    """Q -> DQ snaps to the scale's grid, as a FakeQuantize with the same range does (up to ties)."""
    x = rand("f32", [64], 5, -1, 1)
    q = QuantizeLinear(param("f32", [64]), param("f32", []), param("u8", []))
    s, zp = np.array(2 / 255, np.float32), np.array(128, np.uint8)
    qv = to_host(select_kernel(q, CPU).fn([to_device(v, CPU) for v in (x, s, zp)])[0])
    dq = DequantizeLinear(param("u8", [64]), param("f32", []), param("u8", []))
    y = to_host(select_kernel(dq, CPU).fn([to_device(v, CPU) for v in (qv, s, zp)])[0])
    np.testing.assert_allclose(y, (np.rint(x / s) * s).astype(np.float32), atol=1e-6)
