"""Turn recorded pre/post-processing into ordinary ops in front of a Parameter or behind a Result, or describe
them (``str(PrePostProcessor)``) without touching the model — both as OpenVINO does.

For an input, new Parameters (one per image plane) take the user's tensor; the declared steps run in order,
then the implicit ones (element type, then layout, to the model's). The model's Parameter is replaced only
once every input has been built; a failure leaves the model as it was (see :class:`ModelGuard`).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.layout import Layout, find_permutation, find_squeeze
from vinerun.ir.model import Model
from vinerun.ir.node import Output
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.preprocess import steps as st
from vinerun.preprocess.info import InputInfo, OutputInfo
from vinerun.preprocess.steps import Action, ColorFormat, Context, color_format_name

_YUV_SINGLE = (ColorFormat.NV12_SINGLE_PLANE, ColorFormat.I420_SINGLE_PLANE)
_PLANES = {ColorFormat.NV12_TWO_PLANES: 2, ColorFormat.I420_THREE_PLANES: 3}
_MEMORY_TYPE_KEY = "memory_type_0"  # the rt_info key OpenVINO uses for set_memory_type


def _default_layout(color: ColorFormat) -> Layout:
    return Layout() if color == ColorFormat.UNDEFINED else Layout("NHWC")


def _plane_shape(color: ColorFormat, plane: int, shape: PartialShape, layout: Layout) -> PartialShape:
    """Shape of one plane of an image of ``shape`` in ``color`` (OpenVINO's ColorFormatInfo)."""
    if shape.rank.is_dynamic:
        return shape
    dims = list(shape)
    if color in (ColorFormat.RGB, ColorFormat.BGR):
        c = layout.get_index_by_name("C")
        dims[c + len(dims) if c < 0 else c] = Dimension(3)
        return PartialShape(dims)
    if len(dims) != 4:
        return shape
    half = [d if d.is_dynamic else Dimension(d.get_length() // 2) for d in dims[1:3]]
    if color in _YUV_SINGLE:
        dims[3] = Dimension(1)
        if dims[1].is_static:
            dims[1] = Dimension(dims[1].get_length() * 3 // 2)
    elif color == ColorFormat.NV12_TWO_PLANES:
        dims = dims[:3] + [Dimension(1)] if plane == 0 else [dims[0], *half, Dimension(2)]
    elif color == ColorFormat.I420_THREE_PLANES:
        dims = dims[:3] + [Dimension(1)] if plane == 0 else [dims[0], *half, Dimension(1)]
    elif color in (ColorFormat.RGBX, ColorFormat.BGRX):
        dims[3] = Dimension(4)
    return PartialShape(dims)


@dataclass
class _Input:
    """An input being processed: the new Parameters, and the context the steps start from."""

    param: Parameter
    info: InputInfo
    new_params: list[Parameter]
    context: Context


def _where(port: Output, kind: str) -> str:
    names = port.get_names()
    return f"{kind} '{min(names) if names else port.node.get_friendly_name()}'"


def run_actions(actions: list[Action], nodes: list[Output], ctx: Context, where: str) -> list[Output]:
    """Run ``actions`` in order; a failure names the input/output and the step (then OpenVINO's words)."""
    for action in actions:
        try:
            nodes = action.run(nodes, ctx)
        except ValidationError as e:
            raise ValidationError(f"{where}: step '{action.name}': {e}") from e
    return nodes


def _tensor_names(model: Model) -> set[str]:
    return {n for op in model.get_ordered_ops() for o in op.outputs() for n in o.get_names()}


def _new_params(model: Model, param: Parameter, info: InputInfo) -> _Input:
    """OpenVINO's ``create_new_params``: the user's tensor(s) for ``param`` (not yet in the model)."""
    t, pre = info.tensor(), info.preprocess()
    et = t.element_type if t.element_type is not None else param.get_element_type()
    tensor_layout = t.layout if t.layout is not None else _default_layout(t.color_format)
    model_shape = param.get_partial_shape()
    shape = t.shape if t.shape is not None else model_shape
    model_layout = info.model().layout if info.model().layout is not None else param.get_layout()
    if model_layout.empty and t.layout is not None:
        model_layout = pre.propagate_layout(tensor_layout)
    if not tensor_layout.empty and not model_layout.empty and model_layout != tensor_layout:
        shape, squeezed = find_squeeze(model_layout, model_shape, tensor_layout)
        perm = find_permutation(squeezed, shape, tensor_layout)
        if perm and shape.rank.is_static:
            shape = PartialShape([shape[i] for i in perm])
    else:
        shape, layout = pre.calculate_param_shape(shape, model_layout)
        if tensor_layout.empty:
            tensor_layout = layout
    if t.shape is not None:
        shape = t.shape
    elif t.spatial is not None:
        h, w = st.height_index(tensor_layout, shape), st.width_index(tensor_layout, shape)
        dims = list(shape)
        dims[h], dims[w] = (Dimension(v) if v >= 0 else Dimension() for v in t.spatial)
        shape = PartialShape(dims)
    names = param.output(0).get_names()
    existing: set[str] | None = None
    params = []
    planes = _PLANES.get(t.color_format, 1)
    for plane in range(planes):
        p = Parameter(et, _plane_shape(t.color_format, plane, shape, tensor_layout))
        if plane < len(t.sub_names):
            suffix = "/" + t.sub_names[plane]
            existing = _tensor_names(model) if existing is None else existing
            for name in names:
                if name + suffix in existing:
                    raise ValidationError(f"Error while trying to create plane input with name '{name + suffix}' - "
                                          "name already exists in model. Please specify another sub-name for "
                                          "set_color_format")
            p.output(0).set_names({n + suffix for n in names})
            p.set_friendly_name(param.get_friendly_name() + suffix)
        elif planes == 1:
            p.output(0).set_names(set(names))
            p.set_friendly_name(param.get_friendly_name())
        p.rt_info = dict(param.rt_info)
        p._outputs[0].rt_info = dict(param._outputs[0].rt_info)
        if not tensor_layout.empty:
            p.set_layout(tensor_layout)
        if t.memory_type is not None:
            if t.memory_type:
                p._outputs[0].rt_info[_MEMORY_TYPE_KEY] = t.memory_type
            else:
                p._outputs[0].rt_info.pop(_MEMORY_TYPE_KEY, None)
        params.append(p)
    ctx = Context(tensor_layout, model_layout, param.get_element_type(), model_shape, t.color_format)
    return _Input(param, info, params, ctx)


def _implicit_pre(ctx: Context, node: Output) -> list[Action]:
    implicit = []
    if node.element_type != ctx.target_element_type:
        implicit.append(st.convert_element_type(ctx.target_element_type))
    if not ctx.target_layout.empty and ctx.target_layout != ctx.layout:
        implicit.append(st.convert_layout(ctx.target_layout))
    return implicit


def _finish_input(item: _Input, nodes: list[Output]) -> Output:
    ctx, where = item.context, _where(item.param.output(0), "input")
    color = color_format_name(ctx.color_format)
    if len(nodes) != 1:
        raise ValidationError(f"{where}: Multiple plane input is not allowed as model input. Consider using of "
                              f"convert_color preprocessing operation. Current format is '{color}'")
    if ctx.color_format not in (ColorFormat.RGB, ColorFormat.BGR, ColorFormat.GRAY, ColorFormat.UNDEFINED):
        raise ValidationError(f"{where}: model shall have RGB/BGR/GRAY color format. Consider add 'convert_color' "
                              f"preprocessing operation to convert current color format '{color}'to RGB/BGR/GRAY")
    nodes = run_actions(_implicit_pre(ctx, nodes[0]), nodes, ctx, where)
    node = nodes[0]
    if not node.partial_shape.compatible(ctx.model_shape):
        raise ValidationError(f"Resulting shape '{node.partial_shape}' after preprocessing is not aligned with "
                              f"original parameter's shape: {ctx.model_shape}, input parameter: "
                              f"{item.param.get_friendly_name()}")
    return node


def build_inputs(model: Model, items: list[tuple[Parameter, InputInfo]]) -> None:
    """Build every input's processing, then put the new Parameters in place of the old ones."""
    built = []
    for param, info in items:
        item = _new_params(model, param, info)
        nodes: list[Output] = [p.output(0) for p in item.new_params]
        nodes = run_actions(info.preprocess().actions, nodes, item.context, _where(param.output(0), "input"))
        built.append((item, _finish_input(item, nodes)))
    params = model.get_parameters()
    for item, node in built:
        if item.param not in params:
            raise ValidationError("Parameter to replace has been replaced by previous steps of preprocessing. Use "
                                  "only one InputInfo for one input parameter")
        old = item.param.output(0)
        old.set_names(set())  # they moved to the new Parameter(s)
        for target in list(old.get_target_inputs()):
            if target.get_node() is not node.node:
                target.get_node().set_argument(target.get_index(), node)
        i = params.index(item.param)
        params[i:i + 1] = item.new_params
    for p in model.get_parameters():
        model.remove_parameter(p)
    model.add_parameters(params)


def _output_context(result: Result, info: OutputInfo) -> Context:
    t = info.tensor()
    layout = info.model().layout if info.model().layout is not None else getattr(result, "layout", Layout())
    ctx = Context(layout)
    if t.layout is not None:
        ctx.target_layout = t.layout
    if t.element_type is not None:
        ctx.target_element_type = t.element_type
    return ctx


def _implicit_post(info: OutputInfo, ctx: Context, node: Output) -> list[Action]:
    t, implicit = info.tensor(), []
    if t.element_type is not None and node.element_type != t.element_type and not node.element_type.is_dynamic():
        implicit.append(st.post_convert_element_type(t.element_type))
    if not ctx.target_layout.empty and ctx.target_layout != ctx.layout:
        implicit.append(st.post_convert_layout(ctx.target_layout))
    return implicit


def build_output(result: Result, info: OutputInfo) -> None:
    """Insert the post-processing of ``info`` between ``result`` and the value it reads."""
    if info.model().layout is not None:
        result.layout = info.model().layout
    ctx = _output_context(result, info)
    src = result.input_value(0)
    where = _where(src, "output")
    nodes = run_actions(info.postprocess().actions, [src], ctx, where)
    nodes = run_actions(_implicit_post(info, ctx, nodes[0]), nodes, ctx, where)
    node = nodes[0]
    if node != src:
        names = src.get_names()
        src.set_names(set())
        node.set_names(names)  # vinerun keeps an output's tensor names on the value the Result reads
        node.node.set_friendly_name(f"{src.node.get_friendly_name()}.{src.index}")
        result.set_argument(0, node)
    if not ctx.layout.empty:
        result.layout = ctx.layout


class ModelGuard:
    """Restores a model's wiring, tensor names, parameters and results if ``build()`` fails half way
    (OpenVINO's FunctionGuard)."""

    def __init__(self, model: Model):
        self.model = model
        self.params = model.get_parameters()
        self.results = model.get_results()
        self.ops = model.get_ordered_ops()
        self.wiring = [(op, op.input_values()) for op in self.ops]
        self.names = [(o, o.get_names()) for op in self.ops if op.get_type_name() != "Result" for o in op.outputs()]
        self.friendly = [(op, op._friendly_name) for op in self.ops]
        self.layouts = [(r, getattr(r, "layout", None)) for r in self.results]
        self.consumers = [(d, list(d.consumers)) for op in self.ops for d in op._outputs]

    def restore(self) -> None:
        for op, sources in self.wiring:
            for i, src in enumerate(sources):
                if op.input_value(i) != src:
                    op.set_argument(i, src)
        for out, names in self.names:
            out.set_names(names)
        for op, name in self.friendly:
            op._friendly_name = name
        for r, layout in self.layouts:
            if layout is None:
                r.__dict__.pop("layout", None)
            else:
                r.layout = layout
        for p in self.model.get_parameters():
            self.model.remove_parameter(p)
        self.model.add_parameters(self.params)
        for desc, consumers in self.consumers:  # forget the nodes built before the failure
            desc.consumers[:] = consumers
        self.model.validate_nodes_and_infer_types()


# ---------------------------------------------------------------- str(PrePostProcessor)
def _tensor(shape: PartialShape, layout: Layout, et: object, color: ColorFormat = ColorFormat.UNDEFINED) -> str:
    text = f"{shape}, {'<no layout>' if layout.empty else layout.to_string()}, {et.to_string()}"  # type: ignore[attr-defined]
    return text + (f", {color_format_name(color)}" if color != ColorFormat.UNDEFINED else "")


def _run_listed(out: io.StringIO, actions: list[Action], nodes: list[Output], ctx: Context,
                describe: Callable[[Output, Context], str]) -> list[Output]:
    for action in actions:
        out.write(f"      {action.name}: ({describe(nodes[0], ctx)}")
        nodes = action.run(nodes, ctx)
        out.write(f") -> ({describe(nodes[0], ctx)})\n")
    return nodes


def dump_input(out: io.StringIO, model: Model, param: Parameter, info: InputInfo) -> None:
    item = _new_params(model, param, info)
    ctx, t = item.context, info.tensor()
    nodes: list[Output] = [p.output(0) for p in item.new_params]
    actions = info.preprocess().actions
    first = nodes[0]
    if not (len(nodes) > 1 or first.partial_shape != ctx.model_shape or param.get_layout() != ctx.target_layout
            or first.element_type != ctx.target_element_type or t.memory_type is not None or actions):
        return
    names = param.output(0).get_names()
    out.write("Input " + (f'"{min(names)}"' if names else ""))
    if ctx.color_format != ColorFormat.UNDEFINED:
        out.write(f" (color {color_format_name(ctx.color_format)})")
    if t.memory_type is not None:
        out.write(f" memory type={t.memory_type}")
    out.write(":\n")
    if len(nodes) == 1:
        out.write(f"    User's input tensor: {_tensor(first.partial_shape, ctx.layout, first.element_type)}\n")
    else:
        out.write(f"    {len(nodes)} user's tensors expected for each plane:\n")
        for i, n in enumerate(nodes):
            name = f"{min(n.get_names())} " if n.get_names() else ""
            out.write(f"       {i}: {name}{_tensor(n.partial_shape, ctx.layout, n.element_type)}\n")
    out.write(f"    Model's expected tensor: "
              f"{_tensor(ctx.model_shape, ctx.target_layout, ctx.target_element_type)}\n")
    def describe(n: Output, c: Context) -> str:
        return _tensor(n.partial_shape, c.layout, n.element_type, c.color_format)
    if actions:
        out.write(f"    Pre-processing steps ({len(actions)}):\n")
    nodes = _run_listed(out, actions, nodes, ctx, describe)
    implicit = _implicit_pre(ctx, nodes[0])
    if implicit:
        out.write(f"    Implicit pre-processing steps ({len(implicit)}):\n")
    _run_listed(out, implicit, nodes, ctx, describe)


def dump_output(out: io.StringIO, result: Result, info: OutputInfo) -> None:
    src = result.input_value(0)
    ctx = _output_context(result, info)
    t, actions = info.tensor(), info.postprocess().actions
    model_layout = ctx.layout
    if not ((t.layout is not None and model_layout != ctx.target_layout)
            or (t.element_type is not None and src.element_type != ctx.target_element_type) or actions):
        return
    names = src.get_names()
    out.write("Output " + (f'"{", ".join(sorted(names))}"' if names else "") + ":\n")
    out.write(f"    Model's data tensor: {_tensor(src.partial_shape, model_layout, src.element_type)}\n")
    def describe(n: Output, c: Context) -> str:
        return _tensor(n.partial_shape, c.layout, n.element_type)
    if actions:
        out.write(f"    Post-processing steps ({len(actions)}):\n")
    consumers = list(src._desc.consumers)
    try:
        nodes = _run_listed(out, actions, [src], ctx, describe)
        implicit = _implicit_post(info, ctx, nodes[0])
        if implicit:
            out.write(f"    Post-processing implicit steps ({len(implicit)}):\n")
        nodes = _run_listed(out, implicit, nodes, ctx, describe)
    finally:  # the nodes built to describe the steps must not stay attached to the model
        src._desc.consumers[:] = consumers
    out.write(f"    User's output tensor: {describe(nodes[0], ctx)}\n")
