"""The pre/post-processing steps as OpenVINO defines them: each is a named action that takes the value being
processed (one output per image plane) and a context (current layout and color format, the model's layout,
shape and element type) and returns new outputs built from ordinary ops.

The names are OpenVINO's (``str(PrePostProcessor)`` lists them), and so are the ops each step inserts.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vinerun import opset13 as ops
from vinerun.errors import ValidationError
from vinerun.ir.layout import Layout, apply_permutation, find_permutation, find_unsqueeze
from vinerun.ir.node import Output, as_output
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type


class ColorFormat(enum.Enum):
    """Pixel formats of an input tensor (``ColorFormat.NV12_SINGLE_PLANE``...)."""

    UNDEFINED = 0
    NV12_SINGLE_PLANE = 1
    NV12_TWO_PLANES = 2
    I420_SINGLE_PLANE = 3
    I420_THREE_PLANES = 4
    RGB = 5
    BGR = 6
    GRAY = 7
    RGBX = 8
    BGRX = 9


class ResizeAlgorithm(enum.Enum):
    """``resize()`` algorithms."""

    RESIZE_LINEAR = 0
    RESIZE_CUBIC = 1
    RESIZE_NEAREST = 2
    RESIZE_BILINEAR_PILLOW = 3
    RESIZE_BICUBIC_PILLOW = 4


class PaddingMode(enum.Enum):
    """``pad()`` modes."""

    CONSTANT = 0
    EDGE = 1
    REFLECT = 2
    SYMMETRIC = 3


_COLOR_NAMES = {
    ColorFormat.RGB: "RGB", ColorFormat.BGR: "BGR", ColorFormat.RGBX: "RGBX", ColorFormat.BGRX: "BGRX",
    ColorFormat.GRAY: "GRAY", ColorFormat.NV12_TWO_PLANES: "NV12 (multi-plane)",
    ColorFormat.NV12_SINGLE_PLANE: "NV12 (single plane)", ColorFormat.I420_THREE_PLANES: "I420 (multi-plane)",
    ColorFormat.I420_SINGLE_PLANE: "I420 (single plane)"}
_RESIZE_MODES = {ResizeAlgorithm.RESIZE_LINEAR: "linear", ResizeAlgorithm.RESIZE_CUBIC: "cubic",
                 ResizeAlgorithm.RESIZE_NEAREST: "nearest", ResizeAlgorithm.RESIZE_BILINEAR_PILLOW: "bilinear_pillow",
                 ResizeAlgorithm.RESIZE_BICUBIC_PILLOW: "bicubic_pillow"}


def color_format_name(color: ColorFormat) -> str:
    return _COLOR_NAMES.get(color, "Unknown")


@dataclass
class Context:
    """Where the value being processed stands, and what the model wants (OpenVINO's processing context)."""

    layout: Layout
    target_layout: Layout = field(default_factory=Layout)
    target_element_type: Type = Type.dynamic
    model_shape: PartialShape = field(default_factory=PartialShape.dynamic)
    color_format: ColorFormat = ColorFormat.UNDEFINED


@dataclass
class Action:
    """One step: its name (as ``str(PrePostProcessor)`` prints it) and what it does."""

    name: str
    run: Callable[[list[Output], Context], list[Output]]


def _vec(values: Sequence[Any]) -> str:
    """OpenVINO's ``(a,b,c)`` listing; floats as a C++ stream prints them."""
    if not values:
        return ""
    return "(" + ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) + ")"


def _single(nodes: list[Output], what: str) -> Output:
    if len(nodes) != 1:
        raise ValidationError(f"Can't {what} multi-plane input. Suggesting to convert current image to RGB/BGR "
                              "color format using 'convert_color'")
    return nodes[0]


def _dim_index(layout: Layout, shape: PartialShape, letter: str, what: str) -> int:
    """Index of the dimension ``letter`` of ``layout`` in ``shape`` (checked), OpenVINO's ``get_and_check_*_idx``."""
    if not layout.has_name(letter):
        raise ValidationError(f"Layout {layout} doesn't have `{what}` dimension")
    if shape.rank.is_dynamic:
        raise ValidationError(f"Can't get shape {what} index for shape with dynamic rank")
    idx = layout.get_index_by_name(letter)
    rank = shape.rank.get_length()
    idx = idx + rank if idx < 0 else idx
    if not 0 <= idx < rank:
        raise ValidationError(f"{what.capitalize()} dimension is out of bounds {idx}")
    return idx


def channels_index(layout: Layout, shape: PartialShape) -> int:
    return _dim_index(layout, shape, "C", "channels")


def height_index(layout: Layout, shape: PartialShape) -> int:
    return _dim_index(layout, shape, "H", "height")


def width_index(layout: Layout, shape: PartialShape) -> int:
    return _dim_index(layout, shape, "W", "width")


def _const(values: Any, et: Type | Any, shape: Sequence[int] | None = None) -> Output:
    arr = np.asarray(values, dtype=Type(et).to_dtype())
    if shape is not None:
        if arr.size == 1 and int(np.prod(shape)) != 1:
            arr = np.full(shape, arr.reshape(-1)[0], arr.dtype)
        elif arr.size != int(np.prod(shape)):
            raise ValidationError(f"Did not get the expected number of literals for a constant of shape "
                                  f"{PartialShape(list(shape))} (got {arr.size}, expected {int(np.prod(shape))}).")
        arr = arr.reshape(shape)
    return ops.constant(arr).output(0)


def _out(node: Any) -> Output:
    return as_output(node)


# ---------------------------------------------------------------- pre-processing actions
def _mean_scale(values: list[float], ctx: Context, node: Output, what: str) -> Output:
    if len(values) == 1:
        shape = [1]
    else:
        ps = node.partial_shape
        c = channels_index(ctx.layout, ps)
        if ps[c].is_static and ps[c].get_length() != len(values):
            raise ValidationError(f"Number of channels and mean/values size mismatch: Channels = "
                                  f"{ps[c].get_length()}, mean/scale = {len(values)}, shape = {ps}, "
                                  f"layout = {ctx.layout}")
        shape = [1] * ps.rank.get_length()
        shape[c] = len(values)
    et = node.element_type
    if not et.is_real():
        raise ValidationError(f"{what} preprocessing can be applied to 'float' inputs. Consider using of "
                              f"'convert_element_type' before scaling. Current type is: {et.to_string()}")
    return _const(values, et, shape)


def mean(values: list[float]) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "apply mean preprocessing for")
        return [_out(ops.subtract(node, _mean_scale(values, ctx, node, "Mean")))]
    return Action("mean " + _vec(values), run)


def scale(values: list[float]) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "apply scale preprocessing for")
        divisor = _mean_scale(values, ctx, node, "Scale")
        # OpenVINO's build() turns this Divide by a constant into a Multiply by its reciprocal
        reciprocal = (np.ones((), divisor.node.value.dtype) / divisor.node.value).astype(divisor.node.value.dtype)
        return [_out(ops.multiply(node, ops.constant(reciprocal)))]
    return Action("scale " + _vec(values), run)


def convert_element_type(et: Type) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        t = ctx.target_element_type if et.is_dynamic() else et
        res = []
        for node in nodes:
            if node.element_type.is_dynamic():
                raise ValidationError("Can't insert 'convert_element_type' for dynamic source tensor type.")
            res.append(node if node.element_type == t else _out(ops.convert(node, t)))
        return res
    return Action(f"convert type ({et.to_string()})", run)


def resize(algorithm: ResizeAlgorithm, height: int, width: int) -> Action:
    name = f"resize to ({height}, {width})" if height > 0 and width > 0 else "resize to model width/height"

    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "resize")
        if not (ctx.layout.has_name("H") and ctx.layout.has_name("W")):
            raise ValidationError("Can't add resize for layout without W/H specified. Use 'set_layout' API to define "
                                  "layout of image data, like `NCHW`")
        ps = node.partial_shape
        if ps.rank.is_dynamic:
            raise ValidationError("Resize operation is not supported for fully dynamic shape")
        h_idx, w_idx = height_index(ctx.layout, ps), width_index(ctx.layout, ps)
        h, w = height, width
        if h < 0 or w < 0:
            if ctx.model_shape.rank.is_dynamic:
                raise ValidationError("Resize is not fully specified while target model shape is dynamic")
            dims = [ctx.model_shape[f(ctx.target_layout, ctx.model_shape)] for f in (height_index, width_index)]
            if not all(d.is_static for d in dims):
                raise ValidationError("Dynamic resize: model height and width dimensions shall be static")
            h = h if h >= 0 else dims[0].get_length()
            w = w if w >= 0 else dims[1].get_length()
        sizes = _const([h, w], Type.i64)
        axes = _const([h_idx, w_idx], Type.i64)
        return [_out(ops.interpolate(node, sizes, _RESIZE_MODES[algorithm], "sizes", pads_begin=[0, 0],
                                     pads_end=[0, 0], axes=axes))]
    return Action(name, run)


def _list_str(values: Sequence[int]) -> str:
    return "[ " + ", ".join(str(v) for v in values) + " ]"


def crop(begin: list[int], end: list[int]) -> Action:
    name = f"Crop ({_list_str(begin)},{_list_str(end)})"
    if len(begin) != len(end):
        raise ValidationError(f"{name} begin/end coordinates must have the same size. Begin size={len(begin)}, "
                              f"end size={len(end)}")

    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "crop")
        return [_out(ops.slice(node, _const(begin, Type.i32), _const(end, Type.i32),
                               _const([1] * len(begin), Type.i32), _const(list(range(len(begin))), Type.i64)))]
    return Action(name, run)


_PAD_NAMES = {PaddingMode.EDGE: "copied from edge", PaddingMode.REFLECT: "reflected from tensor",
              PaddingMode.SYMMETRIC: "symmetrically added from tensor"}


def pad(begin: list[int], end: list[int], values: list[float], mode: PaddingMode) -> Action:
    how = f"with {_vec(values)}" if mode == PaddingMode.CONSTANT else _PAD_NAMES[mode]
    name = f"pad(begin {_vec(begin)}, end {_vec(end)}, {how})"

    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "pad")
        et = node.element_type
        if not et.is_real():
            raise ValidationError("Pad preprocessing can be applied to 'float' inputs. Consider using of "
                                  f"'convert_element_type' before padding. Current type is: {et.to_string()}")
        value = _const(values, et, [])
        return [_out(ops.pad(node, _const(begin, Type.i64), _const(end, Type.i64), mode.name.lower(), value))]
    return Action(name, run)


def _transpose(node: Output, perm: Sequence[int], et: Type = Type.i64) -> Output:
    return _out(ops.transpose(node, _const(list(perm), et)))


def convert_layout(layout: Layout) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "convert layout for")
        dst = ctx.target_layout if layout.empty else layout
        shape, src_layout, added = find_unsqueeze(ctx.layout, node.partial_shape, dst)
        if added:
            node = _out(ops.unsqueeze(node, _const(list(range(added)), Type.i64)))
        perm = find_permutation(src_layout, shape, dst)
        if not perm:
            if not layout.empty:
                ctx.layout = layout
            return [node] if added else nodes
        ctx.layout = dst
        return [_transpose(node, perm)]
    return Action(f"convert layout {layout.to_string()}", run)


def convert_layout_dims(dims: list[int]) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "convert layout for")
        new_layout = apply_permutation(ctx.layout, dims)
        out = _transpose(node, dims, Type.u64)
        ctx.layout = new_layout
        return [out]
    return Action(f"convert layout {_vec(dims)}", run)


def _reverse_channels(node: Output, ctx: Context) -> Output:
    if not ctx.layout.has_name("C"):
        raise ValidationError(f"Layout {ctx.layout} doesn't have `channels` dimension")
    ps = node.partial_shape
    if ps.rank.is_static:
        c = channels_index(ctx.layout, ps)
        if ps[c].is_static:
            # OpenVINO builds Range(C-1, -1, -1) and folds it: a constant of reversed indices
            indices = _const(np.arange(ps[c].get_length() - 1, -1, -1), Type.i32)
            return _out(ops.gather(node, indices, _const([c], Type.i32)))
    c = ctx.layout.get_index_by_name("C")
    count = ops.gather(ops.shape_of(node), _const(c, Type.i32), _const(0, Type.i32))
    last = ops.add(count, _const(-1, Type.i64))
    indices = ops.range(last, _const(-1, Type.i64), _const(-1, Type.i64), Type.i32)
    return _out(ops.gather(node, indices, _const([c], Type.i32)))


def reverse_channels() -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        return [_reverse_channels(_single(nodes, "reverse channels for"), ctx)]
    return Action("reverse channels", run)


def _cut_last_channel(node: Output, ctx: Context) -> Output:
    if not ctx.layout.has_name("C"):
        raise ValidationError(f"Layout {ctx.layout} doesn't have `channels` dimension")
    c = ctx.layout.get_index_by_name("C")
    return _out(ops.slice(node, _const([0], Type.i32), _const([-1], Type.i32), _const([1], Type.i32),
                          _const([c], Type.i32)))


def _gray_from_yuv_single_plane(node: Output) -> Output:
    axis = _const([1], Type.i32)
    height = ops.gather(ops.shape_of(node), axis, _const(0, Type.i32))
    et = height.get_output_element_type(0)
    stop = ops.divide(ops.multiply(height, _const([2], et)), _const([3], et))
    return _out(ops.slice(node, _const([0], Type.i32), stop, _const([1], Type.i32), axis))


def _gray_from_rgb(node: Output, ctx: Context) -> Output:
    elem, shape = node.element_type, node.partial_shape
    if shape.rank.is_dynamic or shape.rank.get_length() != 4:
        raise ValidationError(f"Input shape size should be equal to 4, actual size: "
                              f"{shape.rank.get_length() if shape.rank.is_static else '?'}")
    c = channels_index(ctx.layout, shape)
    if not shape[c].compatible(3):
        raise ValidationError(f"Channels dimesion should be equal to 3, actual value: {shape[c]}")
    transposed = c + 1 == shape.rank.get_length()
    if transposed:  # N...C -> NC...
        node = _transpose(node, find_permutation(ctx.layout, shape, Layout("NC...")))
    converted = elem.is_integral_number()
    if converted:  # the weights are floats
        node = _out(ops.convert(node, Type.f32))
    weights = [0.299, 0.587, 0.114] if ctx.color_format == ColorFormat.RGB else [0.114, 0.587, 0.299]
    kernel = _const(weights, Type.f32, [1, 3, 1, 1])
    node = _out(ops.convolution(node, kernel, [1, 1], [0, 0], [0, 0], [1, 1]))
    if converted:  # round as OpenCV does before going back to integers
        node = _out(ops.convert(ops.round(node, "half_to_even"), elem))
    if transposed:
        node = _transpose(node, find_permutation(Layout("NC..."), shape, ctx.layout))
    return node


_YUV_BUILDERS = {ColorFormat.NV12_SINGLE_PLANE: ("nv12", 1), ColorFormat.NV12_TWO_PLANES: ("nv12", 2),
                 ColorFormat.I420_SINGLE_PLANE: ("i420", 1), ColorFormat.I420_THREE_PLANES: ("i420", 3)}


def _not_convertible(src: ColorFormat, dst: ColorFormat) -> ValidationError:
    return ValidationError(f"Source color format '{color_format_name(src)}' is not convertible to "
                           f"'{color_format_name(dst)}'")


def convert_color(dst: ColorFormat) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        src = ctx.color_format
        if src == dst:
            return nodes
        if src in _YUV_BUILDERS:
            family, planes = _YUV_BUILDERS[src]
            if len(nodes) != planes:
                raise ValidationError(f"Internal error: {color_format_name(src)} image must have {planes} input(s)")
            if dst in (ColorFormat.RGB, ColorFormat.BGR):
                out = _out(getattr(ops, f"{family}_to_{dst.name.lower()}")(*nodes))
            elif dst == ColorFormat.GRAY:
                out = _gray_from_yuv_single_plane(nodes[0]) if planes == 1 else nodes[0]
            else:
                raise ValidationError(f"Unsupported conversion from {family.upper()} to '{color_format_name(dst)}' "
                                      "format:")
            ctx.color_format = dst
            return [out]
        rgb = (ColorFormat.RGB, ColorFormat.BGR)
        if src in rgb and dst in rgb:
            out = _reverse_channels(_single(nodes, "convert color for"), ctx)
        elif src in rgb and dst == ColorFormat.GRAY:
            out = _gray_from_rgb(_single(nodes, "convert color for"), ctx)
        elif src in (ColorFormat.RGBX, ColorFormat.BGRX) and dst in rgb:
            out = _cut_last_channel(_single(nodes, "convert color for"), ctx)
            if src.name[:3] != dst.name:
                out = _reverse_channels(out, ctx)
        else:
            raise _not_convertible(src, dst)
        ctx.color_format = dst
        return [out]
    return Action(f"convert color ({color_format_name(dst)})", run)


def custom(fn: Callable[[Output], Any]) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = _single(nodes, "apply custom preprocessing step for")
        return [as_output(fn(node))]
    return Action("custom", run)


# ---------------------------------------------------------------- post-processing actions
def post_convert_element_type(et: Type) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = nodes[0]
        t = ctx.target_element_type if et.is_dynamic() else et
        if t == node.element_type:
            return nodes
        if t.is_dynamic():
            raise ValidationError("Can't convert to dynamic/unknown element type, consider using of "
                                  "InputTensorInfo::set_element_type")
        return [_out(ops.convert(node, t))]
    return Action(f"convert type ({et.to_string()})", run)


def post_convert_layout(layout: Layout) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        node = nodes[0]
        dst = ctx.target_layout if layout.empty else layout
        perm = find_permutation(ctx.layout, node.partial_shape, dst)
        if not perm:
            if not layout.empty:
                ctx.layout = layout
            return nodes
        ctx.layout = dst
        return [_transpose(node, perm)]
    return Action(f"convert layout {layout.to_string()}", run)


def post_custom(fn: Callable[[Output], Any]) -> Action:
    def run(nodes: list[Output], ctx: Context) -> list[Output]:
        return [as_output(fn(nodes[0]))]
    return Action("custom", run)
