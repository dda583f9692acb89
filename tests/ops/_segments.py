"""A helper the native-segment tests share: one model run as a single segment, then as Python steps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.plugins.cpu.native_segment import Segment


def check_one_segment(model: Model, data: np.ndarray, monkeypatch: pytest.MonkeyPatch, node_type: str,
                      tolerance: float = 1e-4) -> tuple[Segment, Any]:
    """Assert ``model`` (f32) compiles to one segment holding a ``node_type`` step, that it matches the reference
    within ``tolerance``, and gives exactly what the same steps give from Python; returns the segment and the
    output."""
    plan = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    (seg,) = plan.items
    assert isinstance(seg, Segment) and node_type in [s.node.type_name for s in seg.steps]
    got = plan.run([data])[0]
    np.testing.assert_allclose(got, run_reference(model, [data])[0], rtol=tolerance, atol=tolerance)
    monkeypatch.setenv("VINERUN_CPU_NATIVE", "0")
    python = ov.Core().compile_model(model, "CPU", F32)._impl.plan
    np.testing.assert_array_equal(python.run([data])[0], got)
    return seg, got
