"""Whole-factor nearest upsampling (Interpolate and ONNX Resize) on oneDNN's resampling: bit-equal to the
reference for every coordinate mode that picks ``d // f``, channels-last read as it is, inside native segments."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vinerun as ov
from tests.ops._precision import F32
from tests.ops._segments import check_one_segment
from vinerun import opset13 as ops
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.interpreter import run_reference
from vinerun.ir.model import Model
from vinerun.ir.types import Type
from vinerun.ops.activations import Relu
from vinerun.ops.concat_split import Concat
from vinerun.ops.convolution import Convolution
from vinerun.ops.interpolate import Resize
from vinerun.plugins.cpu.kernels._dnnl import library

pytestmark = pytest.mark.skipif(library() is None, reason="needs the oneDNN binding (onednn-cpu-gomp)")
RNG = np.random.default_rng(13)
BF16 = np.dtype(ml_dtypes.bfloat16)
EXACT = [("asymmetric", "floor"), ("tf_half_pixel_for_nn", "floor"), ("half_pixel", "round_prefer_floor"),
         ("half_pixel", "round_prefer_ceil"), ("pytorch_half_pixel", "round_prefer_floor")]


def upsample(x, factors, ctm, rounding, sizes=None):
    if sizes is not None:
        return ops.interpolate(x, ops.constant(np.array(sizes, np.int64)), "nearest", "sizes",
                               axes=ops.constant(np.array([2, 3], np.int64)), coordinate_transformation_mode=ctm,
                               nearest_mode=rounding)
    return ops.interpolate(x, ops.constant(np.array(factors, np.float32)), "nearest", "scales",
                           axes=ops.constant(np.array([2, 3], np.int64)), coordinate_transformation_mode=ctm,
                           nearest_mode=rounding)


def kinds(compiled):
    return [s.kernel.exec_type for s in compiled._impl.plan.steps]


@pytest.mark.parametrize("dtype", [np.float32, BF16])
@pytest.mark.parametrize(("ctm", "rounding"), EXACT)
@pytest.mark.parametrize(("factors", "sizes"), [((2.0, 2.0), None), ((3.0, 1.0), None), (None, (10, 15))])
def test_whole_factor_nearest_is_an_exact_copy(dtype, ctm, rounding, factors, sizes):
    x = Parameter(dtype, [1, 3, 5, 5])
    model = Model([upsample(x, factors, ctm, rounding, sizes)], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    data = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32).astype(dtype)
    np.testing.assert_array_equal(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0])
    assert kinds(compiled)[0].startswith("onednn_resample_nearest")


@pytest.mark.parametrize(("factors", "ctm", "rounding"), [
    ((1.5, 1.5), "asymmetric", "floor"),            # not whole
    ((2.0, 2.0), "asymmetric", "round_prefer_floor"),  # rounds d / 2 up for odd d
    ((2.0, 2.0), "align_corners", "floor"),
    ((2.0, 2.0), "half_pixel", "floor"),          # floors d / 2 - 0.25 down for even d
])
def test_other_upsamplings_keep_their_kernel(factors, ctm, rounding):
    x = Parameter(Type.f32, [1, 3, 4, 4])
    model = Model([upsample(x, factors, ctm, rounding)], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    data = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0])
    assert not kinds(compiled)[0].startswith("onednn_resample")


def test_onnx_resize_by_two():
    x = Parameter(Type.f32, [1, 4, 6, 6])
    node = Resize(x, Constant(np.array([1, 1, 2, 2], np.float32)), mode="nearest", shape_calculation_mode="scales",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    model = Model([node], [x])
    compiled = ov.Core().compile_model(model, "CPU", F32)
    data = RNG.standard_normal((1, 4, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(compiled.create_infer_request().infer([data])[0], run_reference(model, [data])[0])
    assert kinds(compiled) == ["onednn_resample_nearest"]


def test_a_yolo_neck_runs_as_one_segment(monkeypatch):
    """conv -> upsample x2 -> concat with a finer conv output -> conv -> pool-free output via a last conv."""
    same = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    two = {"strides": [2, 2], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    x = Parameter(Type.f32, [1, 8, 16, 16])
    fine = Relu(Convolution(x, Constant(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.3), **same))
    coarse = Relu(Convolution(fine, Constant(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.3), **two))
    up = upsample(coarse, (2.0, 2.0), "asymmetric", "floor")
    joined = Concat([up, fine], axis=1)
    y = Relu(Convolution(joined, Constant(RNG.standard_normal((8, 16, 3, 3)).astype(np.float32) * 0.3), **same))
    out = ops.avg_pool(y, [1, 1], [0, 0], [0, 0], [16, 16], True)
    check_one_segment(Model([out], [x]), RNG.standard_normal((1, 8, 16, 16)).astype(np.float32), monkeypatch,
                      "Interpolate")


def test_bf16_lowers_only_the_upsamplings_oneDNN_takes():
    from vinerun.plugins.cpu.kernels._torch import mkldnn_bf16

    if not mkldnn_bf16():
        pytest.skip("no bf16 oneDNN kernels on this CPU")
    same = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    x = Parameter(Type.f32, [1, 8, 6, 6])
    y = Relu(Convolution(x, Constant(RNG.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.3), **same))
    whole, fractional = upsample(y, (2.0, 2.0), "asymmetric", "floor"), upsample(y, (1.5, 1.5), "asymmetric", "floor")
    model = Model([whole, fractional], [x])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    kernels = sorted(s.kernel.exec_type for s in compiled._impl.plan.steps if s.node.type_name == "Interpolate")
    assert kernels == ["aten_interpolate_nearest", "onednn_resample_nearest_bf16"]  # the 1.5x stays f32, on ATen
    data = RNG.standard_normal((1, 8, 6, 6)).astype(np.float32)
    got, want = compiled.create_infer_request().infer([data]), run_reference(model, [data])
    for i, w in enumerate(want):
        np.testing.assert_allclose(np.asarray(got[i], np.float32), w, atol=2**-5 * float(np.abs(w).max()))
