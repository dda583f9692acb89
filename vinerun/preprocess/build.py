"""Turn recorded pre/post-processing into ordinary ops in front of a Parameter or behind a Result.

For an input, a new Parameter takes the user's tensor (element type, layout, shape, color
format: one Parameter per plane for multi-plane formats), the declared steps are applied in
order, and the implicit conversions follow (color must already match; then element type, then
layout, to the model's). The model's Parameter is replaced by the result; its tensor names move
to the new Parameter. Errors name the input and the step that cannot be built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vinerun import opset13 as ops
from vinerun.errors import NotSupportedError, ValidationError
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.layout import Layout
from vinerun.ir.model import Model
from vinerun.ir.node import Output, as_output
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type
from vinerun.preprocess.info import ColorFormat, InputInfo, OutputInfo, PaddingMode, ResizeAlgorithm, Step

YUV = {ColorFormat.NV12_SINGLE_PLANE, ColorFormat.NV12_TWO_PLANES, ColorFormat.I420_SINGLE_PLANE,
       ColorFormat.I420_THREE_PLANES}
_PLANES = {ColorFormat.NV12_TWO_PLANES: ("y", "uv"), ColorFormat.I420_THREE_PLANES: ("y", "u", "v")}
_RESIZE = {ResizeAlgorithm.RESIZE_LINEAR: "linear", ResizeAlgorithm.RESIZE_CUBIC: "cubic",
           ResizeAlgorithm.RESIZE_NEAREST: "nearest"}


@dataclass
class _Value:
    """The value being processed: its planes (one after color conversion), layout and color."""

    planes: list[Output]
    layout: Layout | None
    color: ColorFormat
    where: str  # "input 'x'" / "output 'y'", for error messages

    @property
    def out(self) -> Output:
        if len(self.planes) != 1:
            raise ValidationError(f"{self.where}: {self.color.name} has {len(self.planes)} planes; "
                                  "convert_color() must come before this step")
        return self.planes[0]

    def axis(self, name: str, step: str) -> int:
        if self.layout is None or not self.layout.has_name(name):
            raise ValidationError(f"{self.where}: {step} needs a layout with '{name}' (now {self.layout}); "
                                  "declare it with tensor().set_layout(...) or model().set_layout(...)")
        i = self.layout.get_index_by_name(name)
        return i if i >= 0 else i + len(self.out.partial_shape)


def permutation(src: Layout, dst: Layout, where: str) -> list[int]:
    """Transpose order taking a tensor of layout ``src`` to layout ``dst``."""
    if sorted(src.names) != sorted(dst.names) or any(n in ("...", "?") for n in src.names):
        raise ValidationError(f"{where}: cannot convert layout {src} to {dst}: they must name the same dimensions")
    return [src.names.index(n) for n in dst.names]


def _scaled(d: Dimension, num: int, den: int) -> Dimension:
    return Dimension(d.get_length() * num // den) if d.is_static else Dimension()


def _tensor_shape(info: InputInfo, model_shape: PartialShape, model_layout: Layout | None,
                  layout: Layout | None, where: str) -> PartialShape:
    t = info.tensor()
    if t.shape is not None:
        return t.shape
    shape = model_shape
    if layout is not None and model_layout is not None and layout != model_layout and shape.rank.is_static:
        perm = permutation(model_layout, layout, where)
        shape = PartialShape([shape[i] for i in perm])
    if t.spatial is not None:
        if layout is None or not (layout.has_name("H") and layout.has_name("W")):
            raise ValidationError(f"{where}: set_spatial_*_shape needs a tensor layout with H and W (now {layout})")
        dims = list(shape)
        for name, v in zip("HW", t.spatial, strict=True):
            dims[layout.get_index_by_name(name) % len(dims)] = Dimension(v) if v >= 0 else Dimension()
        shape = PartialShape(dims)
    return shape


def _plane_shapes(color: ColorFormat, shape: PartialShape, where: str) -> list[PartialShape]:
    """One shape per plane of an NHWC image of ``shape`` (whose C is the model's 3 channels)."""
    if color == ColorFormat.UNDEFINED or color in (ColorFormat.RGB, ColorFormat.BGR):
        return [shape]
    if shape.rank.is_dynamic or len(shape) != 4:
        raise ValidationError(f"{where}: color format {color.name} needs a 4D NHWC tensor, got shape {shape}")
    n, h, w, _ = list(shape)
    if color in (ColorFormat.RGBX, ColorFormat.BGRX):
        return [PartialShape([n, h, w, 4])]
    if color == ColorFormat.GRAY:
        return [PartialShape([n, h, w, 1])]
    if color in (ColorFormat.NV12_SINGLE_PLANE, ColorFormat.I420_SINGLE_PLANE):
        return [PartialShape([n, _scaled(h, 3, 2), w, 1])]
    h2, w2 = _scaled(h, 1, 2), _scaled(w, 1, 2)
    if color == ColorFormat.NV12_TWO_PLANES:
        return [PartialShape([n, h, w, 1]), PartialShape([n, h2, w2, 2])]
    return [PartialShape([n, h, w, 1]), PartialShape([n, h2, w2, 1]), PartialShape([n, h2, w2, 1])]


def _per_channel(v: _Value, value: Any, step: str) -> Output:
    out = v.out
    if not out.element_type.is_real():
        raise ValidationError(f"{v.where}: {step} needs a floating-point tensor, it is "
                              f"{out.element_type.get_type_name()}; add convert_element_type(Type.f32) before it")
    arr = np.asarray(value, dtype=out.element_type.to_dtype())
    if arr.ndim == 0 or arr.size == 1:
        return ops.constant(arr.reshape(()))
    c = v.axis("C", step)
    shape = [1] * len(out.partial_shape)
    shape[c] = arr.size
    return ops.constant(arr.reshape(shape))


def _convert_color(v: _Value, dst: ColorFormat) -> None:
    src = v.color
    if src == dst:
        return
    if src in YUV and dst in (ColorFormat.RGB, ColorFormat.BGR):
        family = "nv12" if src.name.startswith("NV12") else "i420"
        builder = getattr(ops, f"{family}_to_{dst.name.lower()}")
        v.planes = [builder(*v.planes).output(0)]
        v.layout = Layout("NHWC")
    elif {src, dst} == {ColorFormat.RGB, ColorFormat.BGR} or (src, dst) in (
            (ColorFormat.RGBX, ColorFormat.RGB), (ColorFormat.BGRX, ColorFormat.BGR),
            (ColorFormat.RGBX, ColorFormat.BGR), (ColorFormat.BGRX, ColorFormat.RGB)):
        keep = [0, 1, 2] if src.name[:3] == dst.name[:3] else [2, 1, 0]
        c = v.axis("C", "convert_color")
        v.planes = [ops.gather(v.out, ops.constant(np.array(keep, np.int64)), ops.constant(np.int64(c))).output(0)]
    else:
        raise NotSupportedError(f"{v.where}: convert_color from {src.name} to {dst.name} is not supported")
    v.color = dst


def _apply(v: _Value, step: Step, model_type: Type, model_layout: Layout | None,
           model_shape: PartialShape) -> None:
    name, args = step
    if name == "convert_element_type":
        et = args[0] if args[0] is not None else model_type
        v.planes = [p if p.element_type == et else ops.convert(p, et).output(0) for p in v.planes]
    elif name == "convert_layout":
        dst = args[0] if args[0] is not None else model_layout
        if dst is None:
            raise ValidationError(f"{v.where}: convert_layout() without a target needs model().set_layout(...)")
        if isinstance(dst, list):
            perm, v.layout = dst, (Layout("[" + ",".join(v.layout.names[i] for i in dst) + "]") if v.layout else None)
        else:
            if v.layout is None:
                raise ValidationError(f"{v.where}: convert_layout({dst}) needs the current layout; "
                                      "declare it with tensor().set_layout(...)")
            perm, v.layout = permutation(v.layout, dst, v.where), dst
        v.planes = [ops.transpose(v.out, ops.constant(np.array(perm, np.int64))).output(0)]
    elif name == "convert_color":
        _convert_color(v, args[0])
    elif name == "resize":
        algorithm, h, w = args
        if algorithm not in _RESIZE:
            raise NotSupportedError(f"{v.where}: resize algorithm {algorithm.name} is not supported "
                                    f"(use {', '.join(a.name for a in _RESIZE)})")
        axes = [v.axis("H", "resize"), v.axis("W", "resize")]
        if h is None or w is None:
            if model_layout is None or not (model_layout.has_name("H") and model_layout.has_name("W")):
                raise ValidationError(f"{v.where}: resize() without a size needs model().set_layout(...) with H and W")
            dims = [model_shape[model_layout.get_index_by_name(n) % len(model_shape)] for n in "HW"]
            if not all(d.is_static for d in dims):
                raise ValidationError(f"{v.where}: resize() without a size needs a static model H and W, "
                                      f"the model's shape is {model_shape}")
            h, w = (d.get_length() for d in dims)
        v.planes = [ops.interpolate(v.out, ops.constant(np.array([h, w], np.int64)), _RESIZE[algorithm], "sizes",
                                    axes=ops.constant(np.array(axes, np.int64))).output(0)]
    elif name == "mean":
        v.planes = [ops.subtract(v.out, _per_channel(v, args[0], "mean()")).output(0)]
    elif name == "scale":
        v.planes = [ops.divide(v.out, _per_channel(v, args[0], "scale()")).output(0)]
    elif name == "reverse_channels":
        c = v.axis("C", "reverse_channels")
        dim = v.out.partial_shape[c]
        if not dim.is_static:
            raise ValidationError(f"{v.where}: reverse_channels() needs a static channel count")
        idx = np.arange(dim.get_length())[::-1].copy()
        v.planes = [ops.gather(v.out, ops.constant(idx), ops.constant(np.int64(c))).output(0)]
    elif name == "crop":
        begin, end = (np.array(a, np.int64) for a in args)
        v.planes = [ops.slice(v.out, ops.constant(begin), ops.constant(end),
                              ops.constant(np.ones_like(begin))).output(0)]
    elif name == "pad":
        begin, end, value, mode = args
        pad_mode = "edge" if mode == PaddingMode.EDGE else mode.name.lower()
        value_const = ops.constant(np.asarray(value, v.out.element_type.to_dtype()))
        v.planes = [ops.pad(v.out, ops.constant(np.array(begin, np.int64)), ops.constant(np.array(end, np.int64)),
                            pad_mode, value_const).output(0)]
    elif name == "custom":
        v.planes = [as_output(args[0](v.out))]


def _layout_of(param: Parameter, declared: Layout | None) -> Layout | None:
    if declared is not None:
        return declared
    return None if param.layout.empty() else param.layout


def build_input(model: Model, param: Parameter, info: InputInfo) -> None:
    """Replace ``param`` by a new Parameter (or one per plane) followed by the steps of ``info``."""
    names = sorted(param.output(0).get_names())
    where = f"input '{names[0] if names else param.friendly_name}'"
    t = info.tensor()
    model_type, model_shape = param.get_element_type(), param.get_partial_shape()
    model_layout = _layout_of(param, info.model().layout)
    layout = t.layout or (Layout("NHWC") if t.color_format != ColorFormat.UNDEFINED else model_layout)
    shape = _tensor_shape(info, model_shape, model_layout, layout, where)
    planes = _plane_shapes(t.color_format, shape, where) if t.shape is None else [shape]
    et = t.element_type or model_type
    new_params = []
    sub_names = t.sub_names or list(_PLANES.get(t.color_format, ()))
    for i, ps in enumerate(planes):
        suffix = f"/{sub_names[i]}" if len(planes) > 1 else ""
        p = Parameter(et, ps, name=param.friendly_name + suffix)
        p.output(0).set_names({n + suffix for n in names})
        if layout is not None:
            p.set_layout(layout)
        new_params.append(p)
    v = _Value([p.output(0) for p in new_params], layout, t.color_format, where)
    for step in info.preprocess().steps:
        _apply(v, step, model_type, model_layout, model_shape)
    if v.color in YUV or len(v.planes) != 1:
        raise ValidationError(f"{where}: the tensor is {v.color.name}; add preprocess().convert_color(ColorFormat.RGB)"
                              " or (ColorFormat.BGR) to give the model an RGB/BGR image")
    _apply(v, ("convert_element_type", (model_type,)), model_type, model_layout, model_shape)
    if v.layout is not None and model_layout is not None and v.layout != model_layout:
        _apply(v, ("convert_layout", (model_layout,)), model_type, model_layout, model_shape)
    if not v.out.partial_shape.compatible(model_shape):
        raise ValidationError(f"{where}: after preprocessing the shape is {v.out.partial_shape}, the model expects "
                              f"{model_shape}; add resize() or set the tensor shape")
    param.output(0).set_names(set())
    param.output(0).replace(v.out)
    params = model.get_parameters()
    index = params.index(param)
    for p in params:
        model.remove_parameter(p)
    model.add_parameters(params[:index] + new_params + params[index + 1:])


def build_output(model: Model, result: Result, info: OutputInfo) -> None:
    """Insert the post-processing of ``info`` between ``result`` and the value it reads."""
    src = result.input_value(0)
    names = src.get_names()
    where = f"output '{min(names) if names else result.friendly_name}'"
    t = info.tensor()
    model_layout = info.model().layout
    v = _Value([src], model_layout, ColorFormat.UNDEFINED, where)
    for step in info.postprocess().steps:
        _apply(v, step, t.element_type or src.element_type, t.layout, src.partial_shape)
    if t.element_type is not None:
        _apply(v, ("convert_element_type", (t.element_type,)), t.element_type, t.layout, src.partial_shape)
    if t.layout is not None and v.layout is not None and v.layout != t.layout:
        _apply(v, ("convert_layout", (t.layout,)), src.element_type, t.layout, src.partial_shape)
    if v.out != src:
        src.set_names(set())
        v.out.set_names(names)
        result.set_argument(0, v.out)
