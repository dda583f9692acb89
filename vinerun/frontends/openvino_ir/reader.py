"""OpenVINO IR (v10, v11) ``.xml`` + ``.bin`` -> :class:`vinerun.ir.Model`.

Each ``<layer type=".." version="..">`` becomes the registered op class; its ``<data>`` attributes
are parsed by the kinds the class declares (``Attr``). ``Const`` layers read their bytes from the
weights at ``offset``/``size``. Ports carry tensor names (``names``) and rt_info; layers carry
rt_info (``fused_names``, ``decompression``, ``old_api_map_*``); so does the model.
Errors name the file and the layer (id, name, type) at fault.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vinerun.errors import ModelReadError, UnsupportedOpError, VinerunError
from vinerun.frontends.openvino_ir import codec
from vinerun.frontends.openvino_ir.rt_info import read_attributes, read_model_rt_info
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.layout import Layout
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ir.registry import get_op_class
from vinerun.ir.types import Type
from vinerun.ops.state import Assign, ReadValue, Variable, VariableInfo

SUPPORTED_VERSIONS = ("10", "11")

#: Layers that need more than "inputs + parsed <data>": type name -> builder(reader, layer, inputs).
LayerHook = Callable[["GraphReader", ET.Element, list[Output]], Node]
LAYER_HOOKS: dict[str, LayerHook] = {}


class IRContext:
    """What the layers of one file share: its name, IR version, weights and variables."""

    def __init__(self, source: str, version: str, weights: bytes | memoryview | None, weights_name: str):
        self.source = source
        self.version = version
        self.weights = weights
        self.weights_name = weights_name
        self.variables: dict[str, Variable] = {}

    def fail(self, layer: ET.Element | None, message: str, cls: type[VinerunError] = ModelReadError) -> VinerunError:
        where = f"{self.source}"
        if layer is not None:
            where += f": layer id={layer.get('id')} name='{layer.get('name')}' type='{layer.get('type')}'"
        return cls(f"{where}: {message}")

    def read_weights(self, layer: ET.Element, offset: int, size: int) -> memoryview:
        if self.weights is None:
            raise self.fail(layer, "the model has constants but no weights (.bin) were given or found")
        if offset < 0 or size < 0 or offset + size > len(self.weights):
            raise self.fail(layer, f"needs bytes [{offset}, {offset + size}) of the weights "
                                   f"'{self.weights_name}', which has only {len(self.weights)} bytes "
                                   "(truncated or mismatched .bin?)")
        return memoryview(self.weights)[offset:offset + size]


class GraphReader:
    """Builds one graph (the model or a body) from a ``<layers>`` + ``<edges>`` pair."""

    def __init__(self, ctx: IRContext, container: ET.Element, name: str = ""):
        self.ctx = ctx
        self.container = container
        self.name = name
        layers_elem = container.find("layers")
        if layers_elem is None:
            raise ctx.fail(None, f"<{container.tag}> has no <layers>")
        self.layers: dict[str, ET.Element] = {}
        for layer in layers_elem.findall("layer"):
            lid = layer.get("id")
            if lid is None or layer.get("type") is None:
                raise ctx.fail(layer, "a <layer> lacks its 'id' or 'type' attribute")
            if lid in self.layers:
                raise ctx.fail(layer, f"duplicate layer id {lid}")
            self.layers[lid] = layer
        self.edges: dict[tuple[str, str], tuple[str, str]] = {}
        edges_elem = container.find("edges")
        for e in [] if edges_elem is None else edges_elem.findall("edge"):
            key = (e.get("to-layer", ""), e.get("to-port", ""))
            src = (e.get("from-layer", ""), e.get("from-port", ""))
            if src[0] not in self.layers or key[0] not in self.layers:
                raise ctx.fail(None, f"edge {src[0]}:{src[1]} -> {key[0]}:{key[1]} names an unknown layer")
            self.edges[key] = src
        self.nodes: dict[str, Node] = {}

    # --- structure -----------------------------------------------------------------------
    @staticmethod
    def ports(layer: ET.Element, kind: str) -> list[ET.Element]:
        elem = layer.find(kind)
        return [] if elem is None else elem.findall("port")

    def _order(self) -> list[str]:
        deps: dict[str, set[str]] = {lid: set() for lid in self.layers}
        for (to_layer, _), (from_layer, _) in self.edges.items():
            deps[to_layer].add(from_layer)
        order, done = [], set()
        pending = sorted(self.layers, key=_id_key)
        while pending:
            ready = [lid for lid in pending if deps[lid] <= done]
            if not ready:
                raise self.ctx.fail(self.layers[pending[0]], "the graph has a cycle through this layer")
            for lid in ready:
                done.add(lid)
                order.append(lid)
            pending = [lid for lid in pending if lid not in done]
        return order

    def _source(self, layer: ET.Element, port: ET.Element) -> Output:
        key = (layer.get("id", ""), port.get("id", ""))
        if key not in self.edges:
            raise self.ctx.fail(layer, f"input port {port.get('id')} has no incoming edge")
        from_layer, from_port = self.edges[key]
        src = self.nodes[from_layer]
        out_ports = [p.get("id") for p in self.ports(self.layers[from_layer], "output")]
        if from_port not in out_ports:
            raise self.ctx.fail(self.layers[from_layer], f"has no output port {from_port} (edge to layer "
                                                         f"{key[0]} port {key[1]})")
        return src.output(out_ports.index(from_port))

    # --- building ------------------------------------------------------------------------
    def build(self) -> Model:
        self._make_variables()
        for lid in self._order():
            layer = self.layers[lid]
            inputs = [self._source(layer, p) for p in self.ports(layer, "input")]
            try:
                node = self._make_node(layer, inputs)
            except VinerunError as e:
                if self.ctx.source in str(e):
                    raise
                cls = UnsupportedOpError if isinstance(e, UnsupportedOpError) else ModelReadError
                raise self.ctx.fail(layer, str(e), cls) from e
            except (TypeError, ValueError, KeyError, IndexError) as e:  # an op rejecting what the IR says
                raise self.ctx.fail(layer, f"cannot be built: {type(e).__name__}: {e}") from e
            self._annotate(layer, node)
            self.nodes[lid] = node
        return self._assemble()

    def _make_variables(self) -> None:
        for layer in self.layers.values():
            if layer.get("type") != "ReadValue":
                continue
            data = _data(layer)
            vid = data.get("variable_id")
            if vid is None or vid in self.ctx.variables:
                continue
            et = codec.parse_attr("type", data.get("variable_type", "dynamic"))
            shape = codec.parse_shape(data["variable_shape"]) if "variable_shape" in data else None
            self.ctx.variables[vid] = Variable(VariableInfo(shape, et, vid))

    def _make_node(self, layer: ET.Element, inputs: list[Output]) -> Node:
        ir_type = layer.get("type", "")
        op_type = codec.op_type_name(ir_type)
        name = layer.get("name")
        data = _data(layer)
        hook = LAYER_HOOKS.get(op_type)
        if hook is not None:
            return hook(self, layer, inputs)
        if op_type == "Parameter":
            return Parameter(codec.parse_attr("type", data.get("element_type", "dynamic")),
                             codec.parse_shape(data.get("shape", "...")), name=name)
        if op_type == "Constant":
            return self._make_constant(layer, data, name)
        if op_type == "Result":
            return Result(*inputs, name=name)
        if op_type in ("ReadValue", "Assign"):
            return self._make_state(op_type, layer, data, inputs, name)
        try:
            cls = get_op_class(op_type, layer.get("version"))
        except UnsupportedOpError:
            raise self.ctx.fail(layer, f"operation {ir_type} (version {layer.get('version')}) is not supported "
                                       "by vinerun", UnsupportedOpError) from None
        attrs = self.parse_data(layer, cls, data)
        return cls(*inputs, name=name, **attrs)

    def parse_data(self, layer: ET.Element, cls: type, data: dict[str, str],
                   skip: tuple[str, ...] = ()) -> dict[str, Any]:
        """``<data>`` text -> attribute values by the kinds ``cls`` declares; unknown names are errors."""
        by_ir = {spec.ir_name: (name, spec) for name, spec in cls._attr_specs.items()}
        attrs: dict[str, Any] = {}
        for key, text in data.items():
            if key in skip:
                continue
            if key not in by_ir:
                raise self.ctx.fail(layer, f"attribute '{key}'=\"{text}\" is not supported by vinerun's "
                                           f"{cls.type_name} ({cls.version}); known: {sorted(by_ir)}",
                                    UnsupportedOpError)
            attr_name, spec = by_ir[key]
            if spec.kind in ("model", "models", "tensor"):
                continue
            if spec.kind == "str" and isinstance(spec.default, str) and spec.default.islower() and text.isupper():
                text = text.lower()  # OpenVINO writes some enums upper-case (eps_mode="INSIDE_SQRT")
            try:
                attrs[attr_name] = codec.parse_attr(spec.kind, text)
            except (ValueError, TypeError) as e:
                raise self.ctx.fail(layer, f"attribute '{key}'=\"{text}\" is not a valid {spec.kind}: {e}") from e
        return attrs

    def _make_constant(self, layer: ET.Element, data: dict[str, str], name: str | None) -> Constant:
        try:
            et = Type(data.get("element_type", ""))
            shape = [int(d) for d in codec.parse_shape(data.get("shape", "")).to_shape()]
            offset, size = int(data["offset"]), int(data["size"])
        except (KeyError, ValueError, TypeError) as e:
            raise self.ctx.fail(layer, f"bad Const attributes {data}: {e}") from e
        count = 1
        for d in shape:
            count *= d
        if et != Type.string and size < codec.packed_size(et, count):
            raise self.ctx.fail(layer, f"size={size} is too small for {count} elements of {et.get_type_name()}")
        raw = self.ctx.read_weights(layer, offset, size)
        try:
            value = codec.decode_tensor(raw, et, shape)
        except ValueError as e:
            raise self.ctx.fail(layer, f"cannot decode its data: {e}") from e
        node = Constant(value, name=name)
        if node.get_output_element_type(0) != et:  # u1 is stored as uint8
            node._etype = et
            node.validate_and_infer_types()
        return node

    def _make_state(self, op_type: str, layer: ET.Element, data: dict[str, str], inputs: list[Output],
                    name: str | None) -> Node:
        vid = data.get("variable_id")
        if vid is None:
            raise self.ctx.fail(layer, "has no variable_id")
        var = self.ctx.variables.get(vid)
        if var is None:  # an Assign without a ReadValue: the variable takes the value's type
            et = inputs[0].element_type if inputs else Type.dynamic
            var = self.ctx.variables[vid] = Variable(VariableInfo(None, et, vid))
        if op_type == "ReadValue":
            return ReadValue(*inputs, variable=var, name=name)
        return Assign(*inputs, variable=var, name=name)

    def _annotate(self, layer: ET.Element, node: Node) -> None:
        node.rt_info.update(read_attributes(layer.find("rt_info")))
        for i, port in enumerate(self.ports(layer, "input")):
            info = read_attributes(port.find("rt_info"))
            if info:
                node.input(i).rt_info.update(info)
        for i, port in enumerate(self.ports(layer, "output")):
            if i >= node.get_output_size():
                raise self.ctx.fail(layer, f"declares {len(self.ports(layer, 'output'))} outputs, "
                                           f"vinerun's {node.type_name} has {node.get_output_size()}")
            names = codec.split_names(port.get("names", ""))
            if names:
                node.output(i).add_names(names)
            node.output(i).rt_info.update(read_attributes(port.find("rt_info")))
        if isinstance(node, Parameter) and "layout" in node.output(0).rt_info:
            node.set_layout(Layout(str(node.output(0).rt_info.pop("layout"))))
        if isinstance(node, Result) and layer.get("output_names"):
            node.output(0).add_names(codec.split_names(layer.get("output_names", "")))

    def _assemble(self) -> Model:
        ids = sorted(self.nodes, key=_id_key)
        params = [self.nodes[i] for i in ids if isinstance(self.nodes[i], Parameter)]
        results = [self.nodes[i] for i in ids if isinstance(self.nodes[i], Result)]
        sinks = [self.nodes[i] for i in ids if isinstance(self.nodes[i], Assign)]
        if self.ctx.version == "10":
            _legacy_names(params, results)
        return Model(results, params, self.name, sinks=sinks)


def _id_key(lid: str) -> tuple[int, str]:
    return (int(lid), lid) if lid.lstrip("-").isdigit() else (1 << 62, lid)


def _data(layer: ET.Element) -> dict[str, str]:
    elem = layer.find("data")
    return dict(elem.attrib) if elem is not None else {}


def _legacy_names(params: list[Node], results: list[Node]) -> None:
    """IR v10 often has no tensor names: name inputs after their layers, outputs after producers."""
    for p in params:
        if not p.output(0).get_names():
            p.output(0).set_names({p.friendly_name})
    for r in results:
        src = r.input_value(0)
        if not src.get_names():
            node = src.node
            src.set_names({node.friendly_name if node.get_output_size() == 1 else f"{node.friendly_name}.{src.index}"})


def _load(xml: Any) -> tuple[bytes, str, Path | None]:
    if isinstance(xml, (bytes, bytearray, memoryview)):
        return bytes(xml), "<IR xml bytes>", None
    if isinstance(xml, str) and xml.lstrip().startswith("<"):
        return xml.encode(), "<IR xml string>", None
    path = Path(xml)
    try:
        return path.read_bytes(), str(path), path
    except OSError as e:
        raise ModelReadError(f"Cannot read IR file '{path}': {e.strerror or e}") from e


def _load_weights(weights: Any, xml_path: Path | None) -> tuple[bytes | None, str]:
    if isinstance(weights, (bytes, bytearray, memoryview)):
        return bytes(weights), "<weights bytes>"
    if hasattr(weights, "data") and hasattr(weights, "element_type"):  # a vinerun Tensor of u8
        return bytes(memoryview(weights.data).cast("B")), "<weights tensor>"
    path = Path(weights) if isinstance(weights, (str, os.PathLike)) else (
        xml_path.with_suffix(".bin") if xml_path is not None else None)
    if path is None:
        return None, "<none>"
    if not path.exists():
        if weights is not None:
            raise ModelReadError(f"Weights file '{path}' does not exist")
        return None, str(path)
    try:
        return path.read_bytes(), str(path)
    except OSError as e:
        raise ModelReadError(f"Cannot read weights file '{path}': {e.strerror or e}") from e


def read_ir(xml: str | os.PathLike | bytes, weights: str | os.PathLike | bytes | None = None) -> Model:
    """Read an OpenVINO IR model; ``weights`` defaults to the ``.bin`` beside an ``.xml`` path."""
    text, source, xml_path = _load(xml)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ModelReadError(f"{source}: not a valid OpenVINO IR file (XML parse error: {e})") from e
    if root.tag != "net":
        raise ModelReadError(f"{source}: not an OpenVINO IR file (root element <{root.tag}>, expected <net>)")
    version = root.get("version", "")
    if version not in SUPPORTED_VERSIONS:
        raise ModelReadError(f"{source}: IR version '{version}' is not supported; vinerun reads IR versions "
                             f"{' and '.join(SUPPORTED_VERSIONS)}")
    data, weights_name = _load_weights(weights, xml_path)
    ctx = IRContext(source, version, data, weights_name)
    model = GraphReader(ctx, root, root.get("name", "")).build()
    model.rt_info.update(read_model_rt_info(root.find("rt_info")))
    return model
