"""oneDNN Add / Subtract / Multiply: broadcasting of the second operand (operands swapped for the commutative
ones), channels-last inputs, and a squeeze-excitation block kept in one native segment."""

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
from vinerun.ops.activations import Relu, Sigmoid
from vinerun.ops.arithmetic import Add, Multiply, Subtract
from vinerun.ops.convolution import Convolution
from vinerun.ops.pooling import AvgPool
from vinerun.plugins.cpu.kernels._dnnl import library

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(8)
BF16 = np.dtype(ml_dtypes.bfloat16)
OPS = {"Add": Add, "Subtract": Subtract, "Multiply": Multiply}


def rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(np.float32).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, BF16])
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize(("a", "b"), [
    ((2, 16, 20, 20), (2, 16, 20, 20)), ((2, 16, 20, 20), (1, 16, 1, 1)), ((2, 16, 20, 20), (20,)),
    ((1, 16, 1, 1), (2, 16, 20, 20)),  # the first operand broadcast: swapped (Add, Multiply) or ATen (Subtract)
])
def test_binary_matches_the_reference(dtype, op, a, b):
    pa, pb = Parameter(dtype, list(a)), Parameter(dtype, list(b))
    model = Model([OPS[op](pa, pb)], [pa, pb])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    inputs = [rand(a, dtype), rand(b, dtype)]
    got = compiled.create_infer_request().infer(inputs)[0]
    np.testing.assert_array_equal(got, run_reference(model, inputs)[0])  # one rounding of the exact result
    kind = compiled._impl.plan.steps[0].kernel.exec_type
    direct = not (op == "Subtract" and a != (2, 16, 20, 20))
    assert kind.startswith("onednn_" if direct else "aten_"), kind


def test_channels_last_and_strided_inputs_from_python():
    pa, pb = Parameter(Type.f32, [1, 16, 20, 20]), Parameter(Type.f32, [1, 16, 20, 20])
    model = Model([Add(pa, pb)], [pa, pb])
    request = ov.Core().compile_model(model, "CPU", F32).create_infer_request()
    a, b = rand([1, 16, 20, 20]), rand([1, 16, 20, 20])
    cl = np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    for x, y in ((cl, b), (a, np.asfortranarray(b)), (cl, cl)):
        np.testing.assert_array_equal(request.infer([x, y])[0], x + y)


def squeeze_excitation() -> Model:
    """conv -> (global pool -> 1x1 conv + ReLU -> 1x1 conv + Sigmoid) scales the conv's channels -> conv -> pool."""
    same = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    one = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}
    x = Parameter(Type.f32, [1, 8, 12, 12])
    y = Relu(Convolution(x, Constant(rand([16, 8, 3, 3]) * 0.3), **same))
    s = AvgPool(y, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[12, 12])
    s = Relu(Convolution(s, Constant(rand([4, 16, 1, 1]) * 0.3), **one))
    s = Sigmoid(Convolution(s, Constant(rand([16, 4, 1, 1]) * 0.3), **one))
    y = Relu(Convolution(Multiply(y, s), Constant(rand([8, 16, 3, 3]) * 0.3), **same))
    return Model([AvgPool(y, strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], kernel=[12, 12])], [x])


def test_squeeze_excitation_runs_as_one_segment(monkeypatch):
    check_one_segment(squeeze_excitation(), rand([1, 8, 12, 12]), monkeypatch, "Multiply", tolerance=1e-5)


@pytest.mark.parametrize("native", ["1", "0"])
def test_a_small_product_of_channels_last_operands_is_handed_out_c_contiguous(native, monkeypatch):
    monkeypatch.setenv("VINERUN_CPU_NATIVE", native)  # "0": the Python steps, NumPy's ufunc on channels-last views
    same = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    x = Parameter(Type.f32, [1, 8, 4, 4])
    a = Relu(Convolution(x, Constant(rand([8, 8, 3, 3])), **same))
    b = Relu(Convolution(x, Constant(rand([8, 8, 3, 3])), **same))
    model = Model([Multiply(a, b)], [x])  # 128 elements: NumPy's ufunc from Python
    data = rand([1, 8, 4, 4])
    out = ov.Core().compile_model(model, "CPU", F32).create_infer_request().infer([data])[0]
    assert out.flags.c_contiguous
    np.testing.assert_allclose(out, run_reference(model, [data])[0], rtol=1e-5, atol=1e-5)
