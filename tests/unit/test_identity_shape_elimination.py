"""IdentityShapeElimination: a Slice that keeps every element and a Squeeze that undoes an Unsqueeze leave the
graph (as converters write them around a 2-D convolution over a width of 1), so the convolution's bias and GELU
fuse into it; slices that drop elements and squeezes of other axes stay."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu, Tanh
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.convolution import Convolution
from vinerun.ops.reshape import Squeeze, Unsqueeze
from vinerun.ops.slicing import Slice
from vinerun.transformations.identity_elimination import IdentityShapeElimination

RNG = np.random.default_rng(3)
INT_MAX = 2**31 - 1


def ints(*values: int) -> Constant:
    return Constant(np.array(values, np.int64))


def types(model: Model) -> list[str]:
    return [n.type_name for n in model.get_ordered_ops()]


@pytest.mark.parametrize(("stop", "step", "removed"), [
    ((INT_MAX, INT_MAX, INT_MAX), (1, 1, 1), True),  # TensorFlow's strided_slice over everything
    ((2, 5, 7), (1, 1, 1), True),  # stops at the static sizes
    ((2, 4, 7), (1, 1, 1), False),  # drops the last row
    ((INT_MAX, INT_MAX, INT_MAX), (1, 2, 1), False),  # every other row
])
def test_a_slice_of_everything_leaves_the_graph(stop, step, removed):
    x = Parameter(Type.f32, [2, 5, 7])
    model = Model([Relu(Slice(x, ints(0, 0, 0), ints(*stop), ints(*step), ints(0, 1, 2)))], [x])
    data = RNG.standard_normal([2, 5, 7]).astype(np.float32)
    want = run_reference(model, [data])[0]
    assert IdentityShapeElimination()(model).modified is removed
    assert ("Slice" in types(model)) is not removed
    np.testing.assert_array_equal(run_reference(model, [data])[0], want)


def test_a_slice_of_a_dynamic_axis_goes_only_when_it_stops_at_int_max():
    x = Parameter(Type.f32, [-1, 5])
    kept = Model([Relu(Slice(x, ints(0), ints(1000), ints(1), ints(0)))], [x])
    gone = Model([Relu(Slice(x, ints(0), ints(INT_MAX), ints(1), ints(0)))], [x])
    assert not IdentityShapeElimination()(kept).modified
    assert IdentityShapeElimination()(gone).modified and "Slice" not in types(gone)


@pytest.mark.parametrize(("added", "squeezed", "removed"), [((3,), (3,), True), ((-1,), (3,), True),
                                                             ((3,), (0,), False)])
def test_a_squeeze_that_undoes_an_unsqueeze_leaves_the_graph(added, squeezed, removed):
    x = Parameter(Type.f32, [1, 4, 6])
    model = Model([Relu(Squeeze(Unsqueeze(x, ints(*added)), ints(*squeezed)))], [x])
    data = RNG.standard_normal([1, 4, 6]).astype(np.float32)
    want = run_reference(model, [data])[0]
    assert IdentityShapeElimination()(model).modified is removed
    assert ("Unsqueeze" in types(model)) is not removed
    np.testing.assert_array_equal(run_reference(model, [data])[0], want)


def test_a_converters_one_dimensional_convolution_fuses_its_bias_and_gelu():
    """magika's pattern: Conv over [N, C, L, 1], Slice(everything), Squeeze(3), Add(bias), tanh GELU written
    out; compiled, one FusedConvolution with the bias and the GELU as post-ops."""
    x = Parameter(Type.f32, [1, 16, 64, 1])
    w = Constant(RNG.standard_normal([24, 16, 5, 1]).astype(np.float32) * 0.2)
    y = Convolution(x, w, strides=[1, 1], dilations=[1, 1], pads_begin=[0, 0], pads_end=[0, 0])
    y = Slice(y, ints(0, 0, 0, 0), ints(INT_MAX, INT_MAX, INT_MAX, 1), ints(1, 1, 1, 1), ints(0, 1, 2, 3))
    y = Add(Squeeze(y, ints(3)), Constant(RNG.standard_normal([24, 1]).astype(np.float32)))
    inner = Multiply(Add(y, Multiply(Constant(np.float32(0.044715)), Multiply(Multiply(y, y), y))),
                     Constant(np.float32(math.sqrt(2 / math.pi))))
    gelu = Multiply(y, Add(Multiply(Tanh(inner), Constant(np.float32(0.5))), Constant(np.float32(0.5))))
    model = Model([gelu], [x])
    data = RNG.standard_normal([1, 16, 64, 1]).astype(np.float32)
    compiled = ov.Core().compile_model(model, "CPU", F32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0],
                               rtol=1e-4, atol=1e-4)
    ops = compiled.get_runtime_model().get_ordered_ops()
    fused = [n for n in ops if n.type_name == "FusedConvolution"]
    assert len(fused) == 1 and fused[0].post_ops == "bias,gelu"
    assert not {"Gelu", "Tanh", "Slice", "Add"} & {n.type_name for n in ops}


@pytest.mark.parametrize(("op", "constant", "first", "removed"), [
    (Multiply, 1.0, False, True), (Multiply, 1.0, True, True), (Add, 0.0, True, True),
    (Multiply, 2.0, False, False),  # not neutral
    ("Divide", 1.0, True, False),  # 1 / x is not x
])
def test_arithmetic_that_does_nothing_leaves_the_graph(op, constant, first, removed):
    from vinerun.ops.arithmetic import Divide
    from vinerun.transformations.identity_elimination import IdentityArithmeticElimination

    op = Divide if op == "Divide" else op
    x = Parameter(Type.f32, [2, 3])
    c = Constant(np.float32(constant))
    model = Model([Relu(op(c, x) if first else op(x, c))], [x])
    data = RNG.standard_normal([2, 3]).astype(np.float32)
    want = run_reference(model, [data])[0]
    assert IdentityArithmeticElimination()(model).modified is removed
    np.testing.assert_array_equal(run_reference(model, [data])[0], want)


def test_a_neutral_constant_that_broadcasts_stays():
    from vinerun.transformations.identity_elimination import IdentityArithmeticElimination

    x = Parameter(Type.f32, [1, 3])
    model = Model([Relu(Multiply(x, Constant(np.ones([4, 3], np.float32))))], [x])  # [1, 3] -> [4, 3]
    assert not IdentityArithmeticElimination()(model).modified


def test_a_concat_of_one_input_leaves():
    """torchvision's DenseNet writes ``torch.cat([x], 1)`` for each block's first layer: a Concat of one input is
    that input, so it leaves the graph (one of two inputs stays), and the values do not change."""
    from vinerun.ops.concat_split import Concat

    x = Parameter(Type.f32, [1, 4, 6, 6])
    model = Model([Concat([Concat([Relu(x)], axis=1), Tanh(x)], axis=1)], [x])
    feed = RNG.standard_normal((1, 4, 6, 6)).astype(np.float32)
    want = run_reference(model, [feed])[0]
    assert IdentityShapeElimination()(model).modified
    assert types(model).count("Concat") == 1
    np.testing.assert_array_equal(run_reference(model, [feed])[0], want)
