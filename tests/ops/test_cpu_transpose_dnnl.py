"""Transpose as a oneDNN reorder: any order and input strides, exact copies, channels-last convolution outputs
taken as they are, inside native segments."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.convolution import Convolution
from vinerun.ops.transpose import Transpose
from vinerun.plugins.cpu.kernels._dnnl import library

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(12)
BF16 = np.dtype(ml_dtypes.bfloat16)


def order(v):
    return Constant(np.array(v, np.int64))


@pytest.mark.parametrize("dtype", [np.float32, BF16])
@pytest.mark.parametrize(("shape", "perm"), [
    ((2, 3, 4, 5), [0, 2, 3, 1]), ((2, 3, 4, 5), [0, 3, 1, 2]), ((6, 7), [1, 0]), ((2, 3, 4), []),
    ((1, 2, 3, 4, 5), [0, 2, 1, 3, 4]),
])
def test_transpose_is_an_exact_copy(dtype, shape, perm):
    x = Parameter(dtype, list(shape))
    model = Model([Transpose(x, order(perm))], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    data = RNG.standard_normal(shape).astype(np.float32).astype(dtype)
    got = compiled.create_infer_request().infer([data])[0]
    np.testing.assert_array_equal(got, np.transpose(data, perm or None))
    assert got.flags.c_contiguous
    assert compiled._impl.plan.steps[0].kernel.exec_type.startswith("onednn_transpose")


def test_strided_inputs_from_python():
    x = Parameter(Type.f32, [2, 3, 4, 5])
    request = ov.Core().compile_model(Model([Transpose(x, order([3, 1, 0, 2]))], [x]), "CPU", F32) \
        .create_infer_request()
    base = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
    for data in (base, np.asfortranarray(base), np.ascontiguousarray(base.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):
        np.testing.assert_array_equal(request.infer([data])[0], np.transpose(data, [3, 1, 0, 2]))


def test_convolution_to_nhwc_output_is_one_segment(monkeypatch):
    """A TensorFlow-style NHWC model output after convolutions: the transposition reads channels-last as it is."""
    same = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    x = Parameter(Type.f32, [1, 8, 10, 10])
    y = Relu(Convolution(x, Constant(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.3), **same))
    y = Relu(Convolution(y, Constant(RNG.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.3), **same))
    model = Model([Transpose(y, order([0, 2, 3, 1]))], [x])
    seg, got = check_one_segment(model, RNG.standard_normal((1, 8, 10, 10)).astype(np.float32), monkeypatch,
                                 "Transpose")
    assert got.shape == (1, 10, 10, 16) and got.flags.c_contiguous
