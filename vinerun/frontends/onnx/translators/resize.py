"""ONNX Resize and Upsample -> Interpolate-11, or the ONNX-only Resize op for what Interpolate lacks."""

from __future__ import annotations

import numpy as np

from vinerun.frontends.onnx.registry import onnx_op
from vinerun.ops.interpolate import Interpolate, Resize

# ONNX coordinate modes Interpolate-11 computes the same way (OpenVINO's tf_half_pixel_for_nn rounds
# differently, and its antialias uses another kernel, so those go to the ONNX-only Resize)
_INTERPOLATE_MODES = {"half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"}


def _nonempty(ctx, i: int) -> bool:
    """Whether optional input ``i`` is present and not an empty tensor."""
    if not ctx.has_input(i):
        return False
    value = ctx.const_value(i)
    if value is not None:
        return value.size > 0
    ps = ctx.input(i).partial_shape
    return not (ps.rank.is_static and len(ps) == 1 and ps[0].is_static and ps[0].get_length() == 0)


def _resize(ctx, mode: str, ctm: str, nearest_mode: str, scales_index: int, sizes_index: int | None):
    data = ctx.input(0)
    use_sizes = sizes_index is not None and _nonempty(ctx, sizes_index)
    target = ctx.input(sizes_index if use_sizes else scales_index)
    calc = "sizes" if use_sizes else "scales"
    if calc == "scales":
        target = ctx.constant(np.asarray(ctx.const_value(scales_index), np.float32)) \
            if ctx.const_value(scales_index) is not None else target
    axes = ctx.attr("axes", None)
    cubic_a = ctx.attr("cubic_coeff_a", -0.75)
    exclude = bool(ctx.attr("exclude_outside", 0))
    antialias = bool(ctx.attr("antialias", 0))
    policy = ctx.attr("keep_aspect_ratio_policy", "stretch")
    onnx_only = (ctm not in _INTERPOLATE_MODES or exclude or antialias or (use_sizes and policy != "stretch")
                 or (ctm == "align_corners" and not use_sizes))
    if not onnx_only:
        args = [data, target] + ([ctx.constant(np.asarray(axes, np.int64))] if axes is not None else [])
        return Interpolate(*args, mode="linear_onnx" if mode == "linear" else mode, shape_calculation_mode=calc,
                           coordinate_transformation_mode=ctm, nearest_mode=nearest_mode, antialias=antialias,
                           cube_coeff=cubic_a).output(0)
    args = [data, target]
    if ctm == "tf_crop_and_resize" and ctx.has_input(1):
        args.append(ctx.input(1))
    return Resize(*args, mode=mode, shape_calculation_mode=calc, coordinate_transformation_mode=ctm,
                  nearest_mode=nearest_mode, antialias=antialias, axes=axes or [], cubic_coeff_a=cubic_a,
                  exclude_outside=exclude, extrapolation_value=ctx.attr("extrapolation_value", 0.0),
                  keep_aspect_ratio_policy=policy).output(0)


@onnx_op("Resize", since=10)
def resize10(ctx):
    """Opset 10: ``(X, scales)``, asymmetric coordinates, nearest rounds down."""
    return _resize(ctx, ctx.attr("mode", "nearest"), "asymmetric", "floor", 1, None)


@onnx_op("Resize", since=11)
def resize11(ctx):
    """Opset 11+: ``(X, roi, scales, sizes)``."""
    return _resize(ctx, ctx.attr("mode", "nearest"), ctx.attr("coordinate_transformation_mode", "half_pixel"),
                   ctx.attr("nearest_mode", "round_prefer_floor"), 2, 3)


@onnx_op("Upsample", since=7)
def upsample7(ctx):
    """Opset 7-8: scales as an attribute."""
    scales = np.asarray(ctx.attr("scales"), np.float32)
    mode = ctx.attr("mode", "nearest")
    return Interpolate(ctx.input(0), ctx.constant(scales), mode="linear_onnx" if mode == "linear" else mode,
                       shape_calculation_mode="scales", coordinate_transformation_mode="asymmetric",
                       nearest_mode="floor").output(0)


@onnx_op("Upsample", since=9)
def upsample9(ctx):
    """Opset 9: ``(X, scales)``."""
    return _resize(ctx, ctx.attr("mode", "nearest"), "asymmetric", "floor", 1, None)
