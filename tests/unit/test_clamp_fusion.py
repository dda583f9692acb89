"""MinMaxToClamp: constant-bound Minimum / Maximum (ReLU6 as OpenVINO's ONNX reader writes a Clip with initializer
bounds) become one Relu or Clamp, the graph computes what it did, and the convolution before takes it as a post-op."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vinerun as ov
from tests.unit.test_affine_fusions import check, conv, f32, model_of, types
from vinerun import opset13 as ops
from vinerun.transformations.clamp_fusion import MinMaxToClamp


def clamps(model):
    return [(float(n.min), float(n.max)) for n in model.get_ordered_ops() if n.type_name == "Clamp"]


@pytest.mark.parametrize("constant_first", [False, True])
def test_relu6_as_maximum_and_minimum_becomes_one_clamp(constant_first):
    def relu6(x):
        if constant_first:
            return ops.minimum(f32(6.0), ops.maximum(f32(0.0), x))
        return ops.minimum(ops.maximum(x, f32(0.0)), f32(6.0))

    m = check(model_of(relu6), MinMaxToClamp)
    assert types(m) == ["Clamp", "Relu"]
    assert clamps(m) == [(0.0, 6.0)]


@pytest.mark.parametrize("build,want_types,want_clamps", [
    (lambda x: ops.maximum(x, f32(0.0)), ["Relu", "Relu"], []),
    (lambda x: ops.maximum(x, f32([-1.5])), ["Clamp", "Relu"], [(-1.5, math.inf)]),
    (lambda x: ops.minimum(f32([[2.5]]), x), ["Clamp", "Relu"], [(-math.inf, 2.5)]),
    (lambda x: ops.maximum(ops.clamp(x, -3.0, 1.0), f32(-1.0)), ["Clamp", "Relu"], [(-1.0, 1.0)]),
    (lambda x: ops.minimum(ops.relu(x), f32(4.0)), ["Clamp", "Relu"], [(0.0, 4.0)]),
])
def test_single_bounds_and_clips_of_clips(build, want_types, want_clamps):
    m = check(model_of(build), MinMaxToClamp)
    assert types(m) == want_types
    assert clamps(m) == want_clamps


def test_bounds_that_are_not_one_constant_or_that_broadcast_stay():
    per_channel = f32(np.linspace(0, 1, 4, dtype=np.float32).reshape(1, 4, 1, 1))
    check(model_of(lambda x: ops.maximum(x, per_channel)), MinMaxToClamp, modified=False)
    check(model_of(lambda x: ops.minimum(x, ops.add(x, f32(1.0)))), MinMaxToClamp, modified=False)
    # a one-element constant of higher rank makes the output larger than x: not a clip of x
    check(model_of(lambda x: ops.maximum(x, f32(np.zeros((1, 1, 1, 1, 1), np.float32))), shape=[4, 6, 5]),
          MinMaxToClamp, modified=False)


def test_integer_data_stays():
    x = ops.parameter([2, 3], ov.Type.i32, name="x")
    m = ov.Model([ops.maximum(x, ops.constant(np.array(0, np.int32)))], [x], "m")
    assert not MinMaxToClamp()(m).modified


def test_a_shared_inner_clip_and_an_empty_range_keep_their_nodes():
    def shared(x):
        lower = ops.maximum(x, f32(0.0))
        return ops.add(ops.minimum(lower, f32(6.0)), lower)  # the Maximum is read twice: not merged

    m = check(model_of(shared), MinMaxToClamp)
    assert clamps(m) == [(-math.inf, 6.0)]
    m = check(model_of(lambda x: ops.minimum(ops.maximum(x, f32(5.0)), f32(2.0))), MinMaxToClamp)
    assert "Minimum" in types(m)  # max(x, 5) then min(., 2) is always 2: left as written


def test_the_convolution_takes_relu6_written_as_minimum_and_maximum():
    """A conv + bias + Maximum + Minimum compiles to one fused convolution step (the Clamp its post-op)."""
    m = model_of(lambda x: ops.minimum(ops.maximum(conv(x), f32(0.0)), f32(6.0)))
    compiled = ov.Core().compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    steps = compiled._impl.plan.steps
    assert [s.node.type_name for s in steps] == ["FusedConvolution"]
    assert [st.kind for st in steps[0].node.steps] == ["bias", "activation", "activation"]
