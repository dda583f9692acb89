"""ONNX ModelProto -> vinerun Model.

Each node goes to its registered translator; ops without one are expanded from an ONNX function
(the model's local functions, then the op schema's function body). Subgraph attributes become
body Models; names they take from an outer scope become extra body Parameters ("captures").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import onnx
from onnx import helper, numpy_helper
from vinerun.errors import ModelReadError, UnsupportedOpError, ValidationError, VinerunError
from vinerun.frontends.onnx.context import NodeContext
from vinerun.frontends.onnx.registry import find_translator
from vinerun.ir.core_ops import Constant, Parameter
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output, _ids
from vinerun.ir.shape import Dimension, PartialShape
from vinerun.ir.types import Type


@dataclass
class Subgraph:
    """A converted GRAPH attribute: the body model, its formal inputs, and captured outer values.

    ``model.get_parameters()`` is ``formal + captured_params``; the op that owns the body passes
    ``captured`` (outer-scope outputs) as extra inputs, in that order.
    """

    model: Model
    formal: list[Parameter]
    captured_params: list[Parameter] = field(default_factory=list)
    captured: list[Output] = field(default_factory=list)


def onnx_type_to_parameter(name: str, tp: onnx.TypeProto | None) -> Parameter:
    kind = tp.WhichOneof("value") if tp is not None else None
    if kind == "tensor_type" and tp.tensor_type.elem_type:
        et = Type.from_onnx(tp.tensor_type.elem_type)
        shape = _shape_of(tp.tensor_type) if tp.tensor_type.HasField("shape") else PartialShape.dynamic()
        p = Parameter(et, shape, name=name)
    else:
        p = Parameter(Type.dynamic, PartialShape.dynamic(), name=name)
        if kind is not None:
            p.rt_info["onnx_kind"] = kind  # sequence_type, optional_type, map_type ...
            p.rt_info["onnx_type"] = tp
    p.output(0).set_names({name})
    return p


def _shape_of(tt: Any) -> PartialShape:
    dims = []
    for d in tt.shape.dim:
        dims.append(Dimension(d.dim_value) if d.HasField("dim_value") else Dimension())
    return PartialShape(dims)


class GraphConverter:
    """Converts one GraphProto (the main graph or a subgraph) within a model's context."""

    def __init__(self, opsets: dict[str, int], functions: dict[tuple[str, str], onnx.FunctionProto],
                 parent: GraphConverter | None = None, source: str = "<bytes>"):
        self.opsets = opsets
        self.functions = functions
        self.parent = parent
        self.source = source
        self.values: dict[str, Output | None] = {}
        self.captured: dict[str, tuple[Parameter, Output]] = {}

    # --- name resolution ---------------------------------------------------------------
    def lookup(self, name: str, who: str) -> Output | None:
        if name == "":
            return None
        if name in self.values:
            return self.values[name]
        if name in self.captured:
            return self.captured[name][0].output(0)
        if self.parent is not None:
            outer = self.parent.lookup(name, who)
            if outer is None:
                return None
            p = Parameter(outer.element_type, outer.partial_shape, name=name)
            p.output(0).set_names({name})
            self.captured[name] = (p, outer)
            return p.output(0)
        raise ModelReadError(f"{self.source}: ONNX node '{who}' reads '{name}', which no node, input or "
                             "initializer produces (is the file truncated or corrupt?)")

    # --- graphs ------------------------------------------------------------------------
    def convert_graph(self, graph: onnx.GraphProto, input_hints: list[Any] | None = None,
                      name: str | None = None) -> tuple[Model, list[Parameter]]:
        initializer_names = set()
        for init in graph.initializer:
            arr = _tensor_to_array(init, self.source)
            c = Constant(arr, name=init.name)
            c.output(0).set_names({init.name})
            self.values[init.name] = c.output(0)
            initializer_names.add(init.name)
        for sp in graph.sparse_initializer:
            from vinerun.frontends.onnx.context import _sparse_to_dense

            c = Constant(_sparse_to_dense(sp), name=sp.values.name)
            c.output(0).set_names({sp.values.name})
            self.values[sp.values.name] = c.output(0)
            initializer_names.add(sp.values.name)
        params: list[Parameter] = []
        for i, vi in enumerate(graph.input):
            if vi.name in initializer_names:
                continue
            p = onnx_type_to_parameter(vi.name, vi.type if vi.HasField("type") else None)
            hint = input_hints[i] if input_hints and i < len(input_hints) else None
            if hint is not None and p.element_type.is_dynamic():
                et, ps = hint
                p.set_element_type(et)
                p.set_partial_shape(ps)
                p.validate_and_infer_types()
            self.values[vi.name] = p.output(0)
            params.append(p)
        for node in graph.node:
            self.convert_node(node)
        results = []
        for vo in graph.output:
            out = self.lookup(vo.name, f"graph output {vo.name}")
            if out is None:
                raise ModelReadError(f"{self.source}: graph output '{vo.name}' is never produced")
            out.add_names({vo.name})
            results.append(out)
        from vinerun.ir.core_ops import Result

        res_nodes = []
        for vo, out in zip(graph.output, results, strict=True):
            r = Result(out, name=vo.name)
            res_nodes.append(r)
        all_params = params + [p for p, _ in self.captured.values()]
        model = Model(res_nodes, all_params, name or graph.name)
        return model, params

    def convert_subgraph(self, graph: onnx.GraphProto, owner: str, input_hints: list[Any] | None = None) -> Subgraph:
        child = GraphConverter(self.opsets, self.functions, parent=self, source=self.source)
        try:
            model, formal = child.convert_graph(graph, input_hints, name=graph.name or f"{owner}_body")
        except VinerunError:
            raise
        captured_params = [p for p, _ in child.captured.values()]
        captured = [o for _, o in child.captured.values()]
        return Subgraph(model, formal, captured_params, captured)

    # --- nodes -------------------------------------------------------------------------
    def convert_node(self, node: onnx.NodeProto) -> None:
        who = node.name or (node.output[0] if node.output else node.op_type)
        inputs = [self.lookup(n, who) for n in node.input]
        domain = node.domain or "ai.onnx"
        if domain == "ai.onnx.ml" and domain not in self.opsets:
            opset = 1
        else:
            opset = self.opsets.get(domain, self.opsets.get("ai.onnx", 1) if domain == "ai.onnx" else 1)
        first_id = next(_ids)
        translator = find_translator(domain, node.op_type, opset)
        try:
            if translator is not None:
                ctx = NodeContext(self, node, inputs, opset)
                outs = translator(ctx)
            else:
                outs = self._expand_function(node, inputs, domain, opset, who)
        except VinerunError as e:
            if f"'{who}'" in str(e):
                raise
            raise type(e)(f"ONNX node '{who}' ({node.op_type}): {e}") from e
        except (ValueError, TypeError, IndexError, KeyError) as e:
            raise ValidationError(f"ONNX node '{who}' ({node.op_type}): {e}") from e
        if isinstance(outs, (Output, Node)):
            outs = [outs]
        outs = list(outs)
        for i, name in enumerate(node.output):
            if name == "":
                continue
            if i >= len(outs) or outs[i] is None:
                self.values[name] = None
                continue
            out = outs[i] if isinstance(outs[i], Output) else outs[i].output(0)
            n = out.node
            if n._id > first_id and n._friendly_name is None:
                n.set_friendly_name(node.name if (node.name and len(node.output) == 1) else name)
            out.add_names({name})
            self.values[name] = out

    def _expand_function(self, node: onnx.NodeProto, inputs: list[Output | None], domain: str,
                         opset: int, who: str) -> list[Output | None]:
        fn = self.functions.get((node.domain, node.op_type))
        if fn is None:
            fn = _schema_function(node, inputs, domain, opset)
        if fn is None:
            raise UnsupportedOpError(
                f"{self.source}: ONNX node '{who}' uses operation {node.op_type} "
                f"(domain '{domain}', opset {opset}), which vinerun does not support")
        opsets = dict(self.opsets)
        for imp in fn.opset_import:
            opsets[imp.domain or "ai.onnx"] = imp.version
        sub = GraphConverter(opsets, self.functions, parent=None, source=self.source)
        for formal, actual in zip(fn.input, inputs, strict=False):  # trailing optional inputs may be left out
            sub.values[formal] = actual
        for formal in list(fn.input)[len(inputs):]:
            sub.values[formal] = None
        attrs = {a.name: a for a in node.attribute}
        defaults = {a.name: a for a in fn.attribute_proto}
        for fnode in fn.node:
            sub.convert_node(_bind_attributes(fnode, attrs, defaults))
        return [sub.values.get(o) for o in fn.output]


def _bind_attributes(fnode: onnx.NodeProto, attrs: dict[str, Any], defaults: dict[str, Any]) -> onnx.NodeProto:
    if not any(a.ref_attr_name for a in fnode.attribute):
        return fnode
    bound = onnx.NodeProto()
    bound.CopyFrom(fnode)
    del bound.attribute[:]
    for a in fnode.attribute:
        if a.ref_attr_name:
            src = attrs.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
            if src is None:
                continue
            b = onnx.AttributeProto()
            b.CopyFrom(src)
            b.name = a.name
            bound.attribute.append(b)
        else:
            bound.attribute.append(a)
    return bound


def _schema_function(node: onnx.NodeProto, inputs: list[Output | None], domain: str, opset: int) -> Any:
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "" if domain == "ai.onnx" else domain)
    except onnx.defs.SchemaError:
        return None
    if schema.has_function:
        fn = schema.get_function_with_opset_version(opset)
        if fn is not None:
            return fn
        return schema.function_body
    if schema.has_context_dependent_function:
        types = []
        for o in inputs:
            if o is None or o.element_type.is_dynamic():
                types.append(onnx.TypeProto().SerializeToString())
                continue
            ps = o.partial_shape
            shape = None if ps.rank.is_dynamic else [d.get_length() if d.is_static else None for d in ps]
            types.append(helper.make_tensor_type_proto(o.element_type.onnx_code, shape).SerializeToString())
        try:
            raw = schema.get_context_dependent_function_with_opset_version(opset, node.SerializeToString(), types)
        except Exception:  # noqa: BLE001 - the schema could not build a body for these inputs
            return None
        if not raw:
            return None
        fn = onnx.FunctionProto()
        fn.ParseFromString(raw)
        return fn
    return None


def _tensor_to_array(t: onnx.TensorProto, source: str) -> np.ndarray:
    try:
        if t.data_type == onnx.TensorProto.STRING:
            return np.array([s.decode("utf-8") for s in t.string_data], dtype=object).reshape(list(t.dims))
        return numpy_helper.to_array(t)
    except Exception as e:  # noqa: BLE001
        raise ModelReadError(f"{source}: initializer '{t.name}' cannot be read: {e}") from e


_counter = itertools.count()


def convert_model(proto: onnx.ModelProto, source: str = "<bytes>") -> Model:
    """Convert a loaded ModelProto (external data already resolved)."""
    opsets = {(imp.domain or "ai.onnx"): imp.version for imp in proto.opset_import}
    if "ai.onnx" not in opsets:
        opsets["ai.onnx"] = 1 if not proto.opset_import else max(opsets.values())
    functions = {(f.domain, f.name): f for f in proto.functions}
    conv = GraphConverter(opsets, functions, source=source)
    if not proto.HasField("graph"):
        raise ModelReadError(f"{source}: the ONNX model has no graph (empty, truncated or not an ONNX file)")
    model, _ = conv.convert_graph(proto.graph, name=proto.graph.name)
    if not model.get_results():
        raise ModelReadError(f"{source}: the ONNX graph has no outputs")
    model.rt_info["framework"] = {"name": "onnx", "producer": proto.producer_name,
                                  "opset": str(opsets.get("ai.onnx"))}
    return model
