"""ScaleShiftFusion: a per-channel ``x * a + b`` (and the ReLU after it) that no convolution took, as DenseNet's
pre-activation BatchNorm after each Concat, is one FusedScaleShift: one oneDNN binary with post-ops, in the native
segment, with the reference's values; what does not match stays as it was."""

from __future__ import annotations

import numpy as np
import pytest

import vinerun as ov
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.arithmetic import Add, Multiply
from vinerun.ops.concat_split import Concat
from vinerun.ops.convolution import Convolution
from vinerun.plugins.cpu.kernels._dnnl import library
from vinerun.plugins.cpu.native_segment import Segment
from vinerun.plugins.cpu.scale_shift_fusion import ScaleShiftFusion

RNG = np.random.default_rng(6)
GEOMETRY = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}


def rand(shape: list[int]) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def types(model: Model) -> list[str]:
    return [n.type_name for n in model.get_ordered_ops() if n.type_name not in ("Parameter", "Constant", "Result")]


@pytest.mark.parametrize("relu", [True, False])
def test_scale_shift_and_relu_become_one_node(relu):
    x = Parameter(Type.f32, [1, 6, 4, 5])
    y = Add(Constant(rand([1, 6, 1, 1])), Multiply(x, Constant(rand([1, 6, 1, 1]))))
    model = Model([Relu(y) if relu else y], [x])
    data = rand([1, 6, 4, 5])
    want = run_reference(model, [data])[0]
    assert ScaleShiftFusion()(model).modified
    assert types(model) == ["FusedScaleShift"]
    np.testing.assert_allclose(run_reference(model, [data])[0], want, rtol=1e-6, atol=1e-6)


def test_a_shift_that_broadcasts_to_more_or_a_shared_product_stays():
    x = Parameter(Type.f32, [1, 6, 1, 5])
    bigger = Model([Add(Multiply(x, Constant(rand([1, 6, 1, 1]))), Constant(rand([1, 6, 4, 1])))], [x])
    assert not ScaleShiftFusion()(bigger).modified
    product = Multiply(x, Constant(rand([1, 6, 1, 1])))
    shared = Model([Add(product, Constant(rand([1, 6, 1, 1]))), Relu(product)], [x])
    assert not ScaleShiftFusion()(shared).modified


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_a_densenet_layer_runs_in_one_segment(precision):
    """Concat -> BatchNorm -> ReLU -> 1x1 convolution: the BatchNorm and ReLU are one FusedScaleShift step."""
    from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16

    if precision == "bf16" and not mkldnn_bf16():
        pytest.skip("no native bf16 on this CPU")
    x = Parameter(Type.f32, [1, 8, 6, 6])
    a = Relu(Convolution(x, Constant(rand([8, 8, 1, 1]) * 0.3), **GEOMETRY))
    b = Relu(Convolution(a, Constant(rand([8, 8, 1, 1]) * 0.3), **GEOMETRY))
    joined = Concat([a, b], axis=1)
    normed = Relu(Add(Multiply(joined, Constant(rand([1, 16, 1, 1]))), Constant(rand([1, 16, 1, 1]))))
    out = Convolution(normed, Constant(rand([8, 16, 1, 1]) * 0.3), **GEOMETRY)
    model = Model([out], [x])
    data = rand([1, 8, 6, 6])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision})
    want = run_reference(model, [data])[0]
    tol = 1e-4 if precision == "f32" else 2**-5 * np.abs(want).max()
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], want, rtol=tol, atol=tol)
    steps = compiled._impl.plan.steps
    assert [s.node.type_name for s in steps].count("FusedScaleShift") == 1
    fused = next(s.node for s in steps if s.node.type_name == "FusedScaleShift")
    # in bf16 the data is bf16 while the scale and shift keep f32 (a BatchNorm's affine rounded to bf16 moved
    # DenseNet-121's output twice as far from f32 as openvino's bf16)
    assert [fused.get_input_element_type(i).get_type_name() for i in range(3)] == \
        [precision, "f32", "f32"]
    if library() is not None:
        segment = next(i for i in compiled._impl.plan.items if isinstance(i, Segment))
        assert "FusedScaleShift" in [s.node.type_name for s in segment.steps]
