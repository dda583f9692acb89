"""ONNX vision ops: GridSample, AffineGrid, RoiAlign, NonMaxSuppression."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ir.types import Type
from vinerun.ops.affine_grid import AffineGrid
from vinerun.ops.convert import Convert
from vinerun.ops.grid_sample import GridSample
from vinerun.ops.nms import NonMaxSuppression
from vinerun.ops.roi_align import ROIAlign

_GRID_MODES = {"linear": "bilinear", "bilinear": "bilinear", "cubic": "bicubic", "bicubic": "bicubic",
               "nearest": "nearest"}


@onnx_op("GridSample", since=16)
def grid_sample(ctx):
    mode = ctx.attr("mode", "bilinear" if ctx.opset < 20 else "linear")
    if mode not in _GRID_MODES:
        raise ctx.unsupported(f"mode '{mode}'")
    return GridSample(ctx.input(0), ctx.input(1), align_corners=bool(ctx.attr("align_corners", 0)),
                      mode=_GRID_MODES[mode], padding_mode=ctx.attr("padding_mode", "zeros")).output(0)


@onnx_op("AffineGrid", since=20)
def affine_grid(ctx):
    return AffineGrid(ctx.input(0), ctx.input(1), align_corners=bool(ctx.attr("align_corners", 0))).output(0)


@onnx_op("RoiAlign", since=10)
def roi_align(ctx):
    default_mode = "output_half_pixel" if ctx.opset < 16 else "half_pixel"
    ctm = ctx.attr("coordinate_transformation_mode", default_mode)
    batch = ctx.input(2)
    if batch.element_type != Type.i32:
        batch = Convert(batch, destination_type=Type.i32).output(0)
    return ROIAlign(ctx.input(0), ctx.input(1), batch, pooled_h=ctx.attr("output_height", 1),
                    pooled_w=ctx.attr("output_width", 1), sampling_ratio=ctx.attr("sampling_ratio", 0),
                    spatial_scale=ctx.attr("spatial_scale", 1.0), mode=ctx.attr("mode", "avg"),
                    aligned_mode="half_pixel" if ctm == "half_pixel" else "asymmetric").output(0)


@onnx_op("NonMaxSuppression", since=10)
def non_max_suppression(ctx):
    def scalar(i: int, dtype: type, default: float):
        return ctx.input(i) if ctx.has_input(i) else ctx.constant(np.asarray(default, dtype))

    args = [ctx.input(0), ctx.input(1), scalar(2, np.int64, 0), scalar(3, np.float32, 0.0),
            scalar(4, np.float32, float("-inf"))]
    encoding = "center" if ctx.attr("center_point_box", 0) else "corner"
    return NonMaxSuppression(*args, box_encoding=encoding, sort_result_descending=False).output(0)
