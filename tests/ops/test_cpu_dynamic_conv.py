"""Convolutions of dynamic shape (an OCR model's any-size image: ``[?, C, ?, ?]``) run oneDNN's primitive per
shape that comes back (a shape's first call: ATen), with their post-ops inside it: against the NumPy reference at
each shape, also where ``SAME_UPPER`` pads differ between shapes, and past the number of shapes a node keeps."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun import opset13 as ops
from vinerun.ir.interpreter import run_reference
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.kernels.conv_dnnl import SHAPES

pytestmark = pytest.mark.skipif(library() is None, reason="oneDNN binding (onednn-cpu-gomp) not installed")
RNG = np.random.default_rng(3)
#: no plan compiled per recurring shape (the runtime cache): the dynamic plan's kernels run every call
DYNAMIC = {**F32, "CPU_RUNTIME_CACHE_CAPACITY": 0}


def _model(auto_pad: str = "explicit", stride: int = 1) -> ov.Model:
    """conv + bias -> hard-swish -> depthwise conv + bias -> scale and shift, on ``[?, 4, ?, ?]``."""
    x = ops.parameter([-1, 4, -1, -1], ov.Type.f32, name="x")
    w = ops.constant(RNG.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3)
    pads = [0, 0] if auto_pad != "explicit" else [1, 1]
    y = ops.convolution(x, w, [stride, stride], pads, pads, [1, 1], auto_pad)
    y = ops.hswish(ops.add(y, ops.constant(RNG.standard_normal((1, 8, 1, 1)).astype(np.float32))))
    dw = ops.constant(RNG.standard_normal((8, 1, 1, 3, 3)).astype(np.float32) * 0.3)
    y = ops.add(ops.group_convolution(y, dw, [1, 1], [1, 1], [1, 1], [1, 1]),
                ops.constant(RNG.standard_normal((1, 8, 1, 1)).astype(np.float32)))
    y = ops.add(ops.multiply(ops.relu(y), ops.constant(np.float32([0.7]))), ops.constant(np.float32([0.1])))
    return ov.Model([y], [x], "dynamic_conv")


def _profile_types(request) -> dict[str, str]:
    return {p.node_name: p.exec_type for p in request.get_profiling_info() if p.status == p.Status.EXECUTED}


@pytest.mark.parametrize(("auto_pad", "stride"), [("explicit", 1), ("same_upper", 2)])
def test_each_shape_runs_onednn_and_matches_the_reference(auto_pad: str, stride: int) -> None:
    model = _model(auto_pad, stride)
    compiled = ov.Core().compile_model(model, "CPU", {**DYNAMIC, "PERF_COUNT": True})
    request = compiled.create_infer_request()
    for shape in [(1, 4, 12, 17), (2, 4, 9, 8)]:
        for call in range(3):
            x = RNG.standard_normal(shape).astype(np.float32)
            got = request.infer([x])[0]
            np.testing.assert_allclose(got, run_reference(model, [x])[0], rtol=1e-4, atol=1e-4)
            types = [t for t in _profile_types(request).values() if "conv" in t]
            first = "aten_conv2d_fused" if call == 0 else "onednn_conv2d["  # a shape's first call: ATen
            assert len(types) == 2 and all(t.startswith(first) for t in types), (call, types)


def test_more_shapes_than_a_node_keeps_still_run() -> None:
    model = _model()
    compiled = ov.Core().compile_model(model, "CPU", DYNAMIC)
    for width in list(range(3, 3 + SHAPES + 3)) * 2:
        x = RNG.standard_normal((1, 4, 5, width)).astype(np.float32)
        np.testing.assert_allclose(compiled([x])[0], run_reference(model, [x])[0], rtol=1e-4, atol=1e-4)
