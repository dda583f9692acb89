"""Shared checks for the GPU kernel tests: build inputs, run a node's device kernel on torch's CPU device and
compare with the node's NumPy reference."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.node import Node, Output
from vinerun.ir.types import Type, storage_dtype
from vinerun.plugins.gpu.kernels import GpuKernel, select_kernel, to_device, to_host

CPU = torch.device("cpu")
NUMPY_OF = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "i8": np.int8,
            "u8": np.uint8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "boolean": np.bool_}


def param(et: str, shape: list[int]) -> Output:
    return Parameter(Type(et), shape).output(0)


def const(value: Any, dtype: Any = np.int64) -> Output:
    return Constant(np.asarray(value, dtype)).output(0)


def rand(et: str, shape: list[int] | tuple[int, ...], seed: int = 0, low: float = -4, high: float = 4) -> np.ndarray:
    """Random values of element type ``et`` (floats uniform in [low, high), integers in their range, capped)."""
    rng = np.random.default_rng(seed)
    dtype = NUMPY_OF[et]
    if et == "boolean":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def device_kernel(node: Node) -> GpuKernel:
    kernel = select_kernel(node, CPU)
    assert kernel.exec_type != "host_ref", f"{node.type_name} fell back to the host"
    return kernel


def check(node: Node, inputs: list[Any], rtol: float = 0.0, atol: float = 0.0) -> list[Any]:
    """Run ``node``'s device kernel on ``inputs`` (one per node input) and compare with ``node.evaluate``."""
    kernel = device_kernel(node)
    expected = node.evaluate([None if v is None else np.asarray(v) for v in inputs])
    got = kernel.fn([None if v is None else to_device(np.asarray(v), CPU) for v in inputs])
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        g = to_host(g)
        want = np.dtype(storage_dtype(node.get_output_element_type(i)))
        assert g.dtype == want == e.dtype, (g.dtype, e.dtype, want)
        assert g.shape == e.shape, (g.shape, e.shape)
        if g.dtype == np.dtype(ml_dtypes.bfloat16):  # NumPy's NaN checks do not know bf16
            g, e = g.astype(np.float32), e.astype(np.float32)
        if rtol or atol:
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, e)
    return got
