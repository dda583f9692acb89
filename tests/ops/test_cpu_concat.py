"""The CPU Concat kernel: oneDNN's concatenation on any input strides, channels-last kept between convolutions,
inside native segments; checked against the reference and against the same steps run from Python."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.concat_split import Concat
from vinerun.ops.convolution import Convolution
from vinerun.ops.pooling import AvgPool
from vinerun.plugins.cpu.kernels import concat_dnnl
from vinerun.plugins.cpu.kernels._dnnl import library

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(21)
SAME = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
BF16 = np.dtype(ml_dtypes.bfloat16)


def rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(np.float32).astype(dtype)


def conv(x, cin, cout):
    return Relu(Convolution(x, Constant(rand([cout, cin, 3, 3]) * 0.3), **SAME))


def inception(pool: bool = True) -> Model:
    """Two convolution branches joined along the channels, a convolution after, a global pool."""
    x = Parameter(Type.f32, [1, 8, 10, 10])
    joined = Concat([conv(x, 8, 8), conv(x, 8, 4), conv(x, 8, 4)], axis=1)
    y = conv(joined, 16, 8)
    return Model([AvgPool(y, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[10, 10]) if pool else y],
                 [x])


@pytest.mark.parametrize("dtype", [np.float32, BF16])
@pytest.mark.parametrize(("shapes", "axis"), [
    ([[2, 3], [2, 5]], 1), ([[2, 3], [4, 3]], 0), ([[1, 2, 3], [1, 4, 3], [1, 1, 3]], -2),
    ([[1, 3, 4, 5], [1, 2, 4, 5]], 1), ([[1, 3, 4, 5], [1, 3, 4, 2]], 3),
])
def test_concat_matches_the_reference(dtype, shapes, axis):
    params = [Parameter(dtype, s) for s in shapes]
    model = Model([Concat(params, axis=axis)], params)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    inputs = [rand(s, dtype) for s in shapes]
    got = compiled.create_infer_request().infer(inputs)[0]
    np.testing.assert_array_equal(got, run_reference(model, inputs)[0])  # a copy: exact in any type
    want = "onednn_concat" if dtype == np.float32 else "onednn_concat_bf16"
    assert [s.kernel.exec_type for s in compiled._impl.plan.steps] == [want]


def test_concat_of_convolutions_stays_in_one_segment_and_matches(monkeypatch):
    seg, _ = check_one_segment(inception(), rand([1, 8, 10, 10]), monkeypatch, "Concat")
    assert "onednn_concat" in [s.kernel.exec_type for s in seg.steps]


def test_concat_takes_mixed_layouts_and_falls_back_past_its_primitives(monkeypatch):
    """From Python, each new combination of input layouts gets a primitive, up to LAYOUTS; then the reference."""
    monkeypatch.setattr(concat_dnnl, "LAYOUTS", 2)
    params = [Parameter(Type.f32, [1, 3, 4, 5]), Parameter(Type.f32, [1, 2, 4, 5])]
    model = Model([Concat(params, axis=1)], params)
    request = ov.Core().compile_model(model, "CPU", F32).create_infer_request()
    dense = [rand([1, 3, 4, 5]), rand([1, 2, 4, 5])]
    channels_last = [np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2) for a in dense]
    fortran = [np.asfortranarray(a) for a in dense]
    for inputs in ([dense[0], channels_last[1]], [channels_last[0], channels_last[1]], fortran, dense):
        np.testing.assert_array_equal(request.infer(inputs)[0], np.concatenate(dense, axis=1))


def test_int_concat_runs_the_reference():
    params = [Parameter(Type.i32, [2, 2]), Parameter(Type.i32, [2, 3])]
    compiled = ov.Core().compile_model(Model([Concat(params, axis=1)], params), "CPU")
    a, b = np.arange(4, dtype=np.int32).reshape(2, 2), np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(compiled.create_infer_request().infer([a, b])[0], np.concatenate([a, b], 1))
    assert compiled._impl.plan.steps[0].kernel.exec_type == "ref"
