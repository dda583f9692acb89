"""Imaging ops: Interpolate/Resize, GridSample, AffineGrid, ROIAlign, NonMaxSuppression, DFT family, STFT."""

from __future__ import annotations

import numpy as np
import pytest

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type
from vinerun.ops.affine_grid import AffineGrid
from vinerun.ops.dft import DFT, IDFT, IRDFT, RDFT, STFT
from vinerun.ops.grid_sample import GridSample
from vinerun.ops.interpolate import Interpolate, Interpolate4, Resize
from vinerun.ops.nms import NonMaxSuppression
from vinerun.ops.roi_align import ROIAlign
from vinerun.plugins.cpu.kernels import select_kernel

RNG = np.random.default_rng(0)


def param(shape, et=Type.f32):
    return Parameter(et, PartialShape(shape))


def const(values, dtype):
    return Constant(np.asarray(values, dtype))


# --- Interpolate / Resize ----------------------------------------------------------------

def test_interpolate_shape_sizes_and_scales():
    sizes = Interpolate(param([1, 3, 4, 6]), const([8, 3], np.int64), const([2, 3], np.int64),
                        mode="nearest", shape_calculation_mode="sizes")
    assert sizes.get_output_partial_shape(0) == PartialShape([1, 3, 8, 3])
    scales = Interpolate(param([1, 3, 4, 6]), const([0.5, 2.5], np.float32), const([2, 3], np.int64),
                         mode="linear_onnx", shape_calculation_mode="scales")
    assert scales.get_output_partial_shape(0) == PartialShape([1, 3, 2, 15])
    dynamic = Interpolate(param([1, 3, 4, 6]), param([2], Type.i64), const([2, 3], np.int64),
                          shape_calculation_mode="sizes")
    assert dynamic.get_output_partial_shape(0) == PartialShape([1, 3, -1, -1])


def test_interpolate_shape_rejects_mismatched_axes():
    with pytest.raises(ValidationError, match="axes"):
        Interpolate(param([1, 3, 4, 6]), const([8, 3, 2], np.int64), const([2, 3], np.int64))


def test_interpolate4_reads_sizes_or_scales():
    node = Interpolate4(param([1, 1, 2, 2]), const([4, 4], np.int64), const([3.0, 3.0], np.float32),
                        const([2, 3], np.int64), mode="nearest", shape_calculation_mode="scales")
    assert node.get_output_partial_shape(0) == PartialShape([1, 1, 6, 6])


def test_nearest_upsample_asymmetric_floor():
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    node = Interpolate(param([1, 1, 2, 2]), const([2.0, 2.0], np.float32), const([2, 3], np.int64),
                       mode="nearest", shape_calculation_mode="scales", coordinate_transformation_mode="asymmetric",
                       nearest_mode="floor")
    y = node.evaluate([x, np.array([2.0, 2.0], np.float32), np.array([2, 3])])[0]
    np.testing.assert_array_equal(y[0, 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])


def test_linear_align_corners_hand_checked():
    x = np.array([[0.0, 3.0]], np.float32)
    node = Interpolate(param([1, 2]), const([4], np.int64), const([1], np.int64), mode="linear_onnx",
                       shape_calculation_mode="sizes", coordinate_transformation_mode="align_corners")
    y = node.evaluate([x, np.array([4]), np.array([1])])[0]
    np.testing.assert_allclose(y, [[0, 1, 2, 3]])
    assert y.dtype == np.float32


def test_linear_half_pixel_integer_rounds():
    x = np.array([[0, 10]], np.uint8)
    node = Interpolate(param([1, 2], Type.u8), const([4], np.int64), const([1], np.int64), mode="linear_onnx",
                       shape_calculation_mode="sizes")
    y = node.evaluate([x, np.array([4]), np.array([1])])[0]
    np.testing.assert_array_equal(y, [[0, 2, 8, 10]])  # 0, 2.5, 7.5, 10 rounded half to even
    assert y.dtype == np.uint8


def test_resize_tf_crop_and_resize_extrapolates():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    roi = np.array([0, 0, -0.5, 0.0, 1, 1, 0.5, 1.0], np.float32)
    node = Resize(param([1, 1, 4, 4]), const([1, 1, 3, 2], np.int64), param([8]), mode="linear",
                  coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)
    y = node.evaluate([x, np.array([1, 1, 3, 2]), roi])[0]
    # rows at -1.5, 0, 1.5: the first is outside the image
    np.testing.assert_allclose(y[0, 0], [[-1, -1], [0, 3], [6, 9]])


def test_resize_keep_aspect_ratio_shape():
    node = Resize(param([1, 1, 4, 6]), const([8, 8], np.int64), axes=[2, 3], shape_calculation_mode="sizes",
                  keep_aspect_ratio_policy="not_larger")
    assert node.get_output_partial_shape(0) == PartialShape([1, 1, 5, 8])


def test_cubic_exclude_outside_preserves_constant():
    x = np.full((1, 1, 3, 3), 2.0, np.float32)
    node = Resize(param([1, 1, 3, 3]), const([1, 1, 0.5, 0.5], np.float32), mode="cubic",
                  shape_calculation_mode="scales", exclude_outside=True, cubic_coeff_a=-0.5)
    y = node.evaluate([x, np.array([1, 1, 0.5, 0.5], np.float32)])[0]
    np.testing.assert_allclose(y, np.full((1, 1, 1, 1), 2.0))


_KERNEL_CASES = [
    dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    dict(mode="nearest", coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_ceil"),
    dict(mode="linear_onnx", coordinate_transformation_mode="half_pixel"),
    dict(mode="linear_onnx", coordinate_transformation_mode="align_corners"),
    dict(mode="cubic", coordinate_transformation_mode="half_pixel"),
    dict(mode="cubic", coordinate_transformation_mode="align_corners"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("attrs", _KERNEL_CASES)
@pytest.mark.parametrize("calc, target", [("scales", [1.0, 1.0, 2.0, 0.75]), ("sizes", [2, 3, 9, 5])])
def test_interpolate_kernel_matches_reference(dtype, attrs, calc, target):
    x = RNG.standard_normal((2, 3, 6, 8)).astype(dtype)
    tgt = np.asarray(target, np.float32 if calc == "scales" else np.int64)
    node = Interpolate(param(x.shape, Type(dtype)), param([4], Type(tgt.dtype)), shape_calculation_mode=calc,
                       **attrs)
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith("aten_interpolate")
    got, want = kernel.fn([x, tgt])[0], node.evaluate([x, tgt])[0]
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_interpolate_kernel_falls_back_for_batch_resize():
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    node = Interpolate(param(x.shape), param([4], Type.i64), mode="nearest", shape_calculation_mode="sizes",
                       coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    sizes = np.array([4, 3, 8, 8])
    np.testing.assert_array_equal(select_kernel(node).fn([x, sizes])[0], node.evaluate([x, sizes])[0])


# --- GridSample / AffineGrid -----------------------------------------------------------------

def test_grid_sample_shape():
    node = GridSample(param([2, 3, 8, 8]), param([2, 5, 7, 2]))
    assert node.get_output_partial_shape(0) == PartialShape([2, 3, 5, 7])
    with pytest.raises(ValidationError):
        GridSample(param([2, 3, 8, 8]), param([2, 5, 7, 3]))


def test_affine_identity_grid_reproduces_input():
    x = RNG.standard_normal((1, 2, 4, 5)).astype(np.float32)
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    for align in (False, True):
        grid = AffineGrid(param([1, 2, 3]), const([1, 2, 4, 5], np.int64), align_corners=align)
        assert grid.get_output_partial_shape(0) == PartialShape([1, 4, 5, 2])
        g = grid.evaluate([theta, np.array([1, 2, 4, 5])])[0]
        for mode in ("bilinear", "nearest", "bicubic"):
            node = GridSample(param(x.shape), param(g.shape), mode=mode, align_corners=align)
            np.testing.assert_allclose(node.evaluate([x, g])[0], x, atol=1e-5)


def test_grid_sample_padding_modes_hand_checked():
    x = np.array([[[[1.0, 2.0, 3.0]]]], np.float32)  # W = 3, H = 1
    # x = -1.4, 3.4 and -2 pixels (align_corners=0), rounded to -1, 3, -2; reflection mirrors at -0.5 and 2.5
    grid = np.array([[[[-1.6, 0.0], [1.6, 0.0], [-2.0, 0.0]]]], np.float32)
    want = {"zeros": [0.0, 0.0, 0.0], "border": [1.0, 3.0, 1.0], "reflection": [1.0, 3.0, 2.0]}
    for padding, expected in want.items():
        node = GridSample(param(x.shape), param(grid.shape), mode="nearest", padding_mode=padding)
        np.testing.assert_allclose(node.evaluate([x, grid])[0].reshape(-1), expected)


_GRID_CASES = [("bilinear", "zeros"), ("bilinear", "border"), ("nearest", "zeros"), ("nearest", "border"),
               ("bicubic", "zeros")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode, padding", _GRID_CASES)
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_kernel_matches_reference(dtype, mode, padding, align):
    x = RNG.standard_normal((2, 3, 5, 6)).astype(dtype)
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(dtype)
    node = GridSample(param(x.shape, Type(dtype)), param(grid.shape, Type(dtype)), mode=mode,
                      padding_mode=padding, align_corners=align)
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith("aten_grid_sample")
    got, want = kernel.fn([x, grid])[0], node.evaluate([x, grid])[0]
    assert got.dtype == want.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grid_sample_kernel_matches_reference_5d(dtype):
    x = RNG.standard_normal((1, 2, 3, 4, 5)).astype(dtype)
    grid = RNG.uniform(-1.2, 1.2, (1, 2, 3, 4, 3)).astype(dtype)
    node = GridSample(param(x.shape, Type(dtype)), param(grid.shape, Type(dtype)))
    got, want = select_kernel(node).fn([x, grid])[0], node.evaluate([x, grid])[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


# --- ROIAlign / NonMaxSuppression ------------------------------------------------------------

def test_roi_align_shape_and_constant_image():
    node = ROIAlign(param([1, 2, 8, 8]), param([3, 4]), param([3], Type.i32), pooled_h=2, pooled_w=3,
                    sampling_ratio=2, spatial_scale=1.0, mode="avg")
    assert node.get_output_partial_shape(0) == PartialShape([3, 2, 2, 3])
    x = np.full((1, 2, 8, 8), 5.0, np.float32)
    rois = np.array([[0, 0, 4, 4], [1, 1, 7, 6], [2, 2, 3, 3]], np.float32)
    y = node.evaluate([x, rois, np.zeros(3, np.int32)])[0]
    np.testing.assert_allclose(y, 5.0)
    assert y.dtype == np.float32


def test_roi_align_avg_of_linear_ramp():
    x = np.tile(np.arange(8, dtype=np.float32), (8, 1))[None, None]  # value = column index
    node = ROIAlign(param(x.shape), param([1, 4]), param([1], Type.i32), pooled_h=1, pooled_w=2,
                    sampling_ratio=1, spatial_scale=1.0, mode="avg", aligned_mode="half_pixel")
    y = node.evaluate([x, np.array([[1, 1, 5, 5]], np.float32), np.array([0], np.int32)])[0]
    # bins [0.5, 2.5] and [2.5, 4.5] in shifted coordinates: sampled at their centres 1.5 and 3.5
    np.testing.assert_allclose(y.reshape(-1), [1.5, 3.5])


def test_nms_hand_checked():
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6], [0, 10, 1, 11]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.1]]], np.float32)
    node = NonMaxSuppression(param([1, 4, 4]), param([1, 1, 4]), param([], Type.i64), param([]), param([]),
                             sort_result_descending=False)
    assert node.get_output_partial_shape(0) == PartialShape([-1, 3])
    idx, sel_scores, valid = node.evaluate([boxes, scores, np.array(3), np.array(0.5, np.float32),
                                            np.array(0.2, np.float32)])
    np.testing.assert_array_equal(idx, [[0, 0, 0], [0, 0, 2]])
    np.testing.assert_allclose(sel_scores[:, 2], [0.9, 0.7])
    assert idx.dtype == np.int64 and valid.tolist() == [2]


# --- DFT family / STFT -----------------------------------------------------------------------

def _complex(shape, dtype):
    return RNG.standard_normal((*shape, 2)).astype(dtype)


def test_dft_shapes():
    assert DFT(param([4, 6, 2]), const([0], np.int64), const([8], np.int64)).get_output_partial_shape(0) == \
        PartialShape([8, 6, 2])
    assert RDFT(param([4, 6]), const([0, 1], np.int64)).get_output_partial_shape(0) == PartialShape([4, 4, 2])
    assert IRDFT(param([4, 4, 2]), const([1], np.int64)).get_output_partial_shape(0) == PartialShape([4, 6])
    assert STFT(param([2, 128]), param([16]), const(16, np.int64), const(8, np.int64)).get_output_partial_shape(0) \
        == PartialShape([2, 15, 9, 2])


def test_dft_reference_matches_numpy():
    x = _complex((3, 5), np.float64)
    y = IDFT(param([3, 5, 2], Type.f64), const([1], np.int64)).evaluate([x, np.array([1])])[0]
    want = np.fft.ifft(x[..., 0] + 1j * x[..., 1], axis=1)
    np.testing.assert_allclose(y[..., 0] + 1j * y[..., 1], want)


def test_stft_of_constant_signal():
    signal = np.ones((1, 32), np.float32)
    node = STFT(param([1, 32]), param([8]), const(8, np.int64), const(8, np.int64))
    y = node.evaluate([signal, np.ones(8, np.float32), np.array(8), np.array(8)])[0]
    assert y.shape == (1, 4, 5, 2)
    np.testing.assert_allclose(y[0, :, 0, 0], 8.0)
    np.testing.assert_allclose(y[0, :, 1:], 0.0, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls, shape, axes, sizes", [
    (DFT, (4, 6, 2), [0, 1], None), (DFT, (4, 6, 2), [1], [9]), (RDFT, (4, 6), [1], None),
    (RDFT, (4, 6), [0, 1], [5, 4]), (IRDFT, (4, 4, 2), [1], None), (IRDFT, (4, 4, 2), [0, 1], [4, 7])])
def test_fft_kernels_match_reference(dtype, cls, shape, axes, sizes):
    x = RNG.standard_normal(shape).astype(dtype)
    ins = [x, np.array(axes, np.int64)] + ([np.array(sizes, np.int64)] if sizes else [])
    node = cls(*[param(a.shape, Type(a.dtype)) for a in ins])
    kernel = select_kernel(node)
    assert kernel.exec_type.startswith("torch_fft")
    got, want = kernel.fn(ins)[0], node.evaluate(ins)[0]
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_interpolate_rejects_unknown_attributes():
    with pytest.raises(ValidationError, match="coordinate_transformation_mode"):
        Interpolate(param([1, 1, 4, 4]), const([2, 2], np.int64), const([2, 3], np.int64), mode="nearest",
                    coordinate_transformation_mode="diagonal")
    with pytest.raises(ValidationError, match="mode"):
        Interpolate(param([1, 1, 4, 4]), const([2, 2], np.int64), const([2, 3], np.int64), mode="area")
