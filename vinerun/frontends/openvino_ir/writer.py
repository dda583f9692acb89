"""vinerun Model -> OpenVINO IR v11 (``.xml`` + ``.bin``), as ``openvino.save_model`` writes it.

Layers are numbered in topological order (Parameters first, in model order; Results last, in
model order, so a reader gets both orders back). Ports are numbered inputs first, then outputs.
Constants are written once per distinct byte string. With ``compress_to_fp16`` an f32 Constant
becomes an f16 Constant followed by ``Convert(f32)`` marked ``decompression`` in its rt_info.
"""

from __future__ import annotations

import hashlib
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from vinerun.errors import UnsupportedOpError
from vinerun.frontends.openvino_ir import codec
from vinerun.frontends.openvino_ir.rt_info import write_attributes, write_model_rt_info
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type

_F16_MAX = float(np.finfo(np.float16).max)

#: Attributes an op leaves None to mean "the default", which OpenVINO needs spelled out in the IR.
_IMPLIED: dict[str, Callable[[Node], Any]] = {
    "activations": lambda node: list(getattr(node, "default_activations", ())) or None,  # RNN/GRU/LSTM
}

#: Window attributes an op may leave empty to mean "the default on every spatial axis" (stride 1, no padding,
#: no dilation); OpenVINO checks that they have one value per spatial axis, so the IR spells them out.
_WINDOW_DEFAULTS = {"strides": 1, "dilations": 1, "pads_begin": 0, "pads_end": 0, "output_padding": 0}
_WINDOWED_OPS = {"MaxPool", "AvgPool", "Convolution", "GroupConvolution", "ConvolutionBackpropData",
                 "GroupConvolutionBackpropData", "BinaryConvolution", "DeformableConvolution"}


def _window_default(node: Node, name: str) -> list[int] | None:
    """The value an empty window attribute stands for, one per spatial axis (None when the rank is unknown)."""
    if node.type_name not in _WINDOWED_OPS or name not in _WINDOW_DEFAULTS:
        return None
    rank = node.get_input_partial_shape(0).rank
    if rank.is_dynamic or rank.get_length() < 3:
        return None
    return [_WINDOW_DEFAULTS[name]] * (rank.get_length() - 2)

#: Layers written with bodies and port maps instead of ``<data>``: type name -> fn(writer, node, layer).
LayerWriterHook = Callable[["GraphWriter", Node, ET.Element], None]
WRITE_HOOKS: dict[str, LayerWriterHook] = {}


class WeightsBuffer:
    """The ``.bin`` being written: appends byte strings, returning (offset, size); dedups repeats."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self._seen: dict[tuple[int, bytes], int] = {}

    def add(self, data: bytes) -> tuple[int, int]:
        key = (len(data), hashlib.sha256(data).digest())
        if key in self._seen:
            return self._seen[key], len(data)
        offset = self.size
        self.chunks.append(data)
        self.size += len(data)
        self._seen[key] = offset
        return offset, len(data)

    def getvalue(self) -> bytes:
        return b"".join(self.chunks)


#: (op type, first input index) of the inputs that hold quantization parameters
_QUANTIZATION_INPUTS = {"FakeQuantize": 1, "QuantizeLinear": 1, "DequantizeLinear": 1}


def _quantization_parameter(node: Node) -> bool:
    """A FakeQuantize limit or a Q/DQ scale: kept in f32 as openvino keeps them (in f16 a range's ends leave the
    integer grid, and a runtime could no longer run the layer on int8 kernels)."""
    for target in node.output(0).get_target_inputs():
        first = _QUANTIZATION_INPUTS.get(target.get_node().type_name)
        if first is not None and target.get_index() >= first:
            return True
    return False


def _should_compress(node: Node) -> bool:
    if not isinstance(node, Constant) or node.get_output_element_type(0) != Type.f32:
        return False
    if "disable_fp16_compression" in node.rt_info or "precise" in node.rt_info or _quantization_parameter(node):
        return False
    value = node.get_value()
    finite = value[np.isfinite(value)]
    return finite.size == 0 or float(np.abs(finite).max()) <= _F16_MAX


def _dims(parent: ET.Element, shape: PartialShape) -> None:
    if shape.rank.is_dynamic:
        return
    for d in shape:
        ET.SubElement(parent, "dim").text = codec.port_dim(d)


class GraphWriter:
    """Writes one graph (the model or a body) into a ``<layers>`` + ``<edges>`` pair."""

    def __init__(self, weights: WeightsBuffer, compress_to_fp16: bool):
        self.weights = weights
        self.compress = compress_to_fp16
        self.layer_of: dict[int, int] = {}  # id(node) -> layer id
        self.next_id = 0

    def write(self, model: Model, parent: ET.Element) -> None:
        layers = ET.SubElement(parent, "layers")
        edges: list[tuple[int, int, int, int]] = []
        for node in self._order(model):
            self._write_node(node, layers, edges)
        edges_elem = ET.SubElement(parent, "edges")
        for fl, fp, tl, tp in sorted(edges):
            ET.SubElement(edges_elem, "edge", {"from-layer": str(fl), "from-port": str(fp),
                                               "to-layer": str(tl), "to-port": str(tp)})

    @staticmethod
    def _order(model: Model) -> list[Node]:
        params, results = model.get_parameters(), model.get_results()
        special = {id(n) for n in (*params, *results)}
        middle = [n for n in model.get_ordered_ops() if id(n) not in special]
        return [*params, *middle, *results]

    def _new_layer(self, layers: ET.Element, node: Node | None, name: str, ir_type: str, version: str) -> ET.Element:
        lid = self.next_id
        self.next_id += 1
        if node is not None:
            self.layer_of[id(node)] = lid
        return ET.SubElement(layers, "layer", {"id": str(lid), "name": name, "type": ir_type, "version": version})

    def _write_node(self, node: Node, layers: ET.Element, edges: list) -> None:
        if self.compress and _should_compress(node):
            self._write_compressed_constant(node, layers, edges)
            return
        layer = self._new_layer(layers, node, node.friendly_name, codec.ir_type_name(node.type_name), node.version)
        hook = WRITE_HOOKS.get(node.type_name)
        if hook is None:
            self._write_data(node, layer)
        write_attributes(layer, node.rt_info)
        inputs = node.input_values()
        while inputs and inputs[-1] is None:
            inputs.pop()
        if any(v is None for v in inputs):
            raise UnsupportedOpError(f"{node.type_name} '{node.friendly_name}': an absent optional input before a "
                                     "present one cannot be written to OpenVINO IR")
        self._write_inputs(node, layer, inputs, edges)
        self._write_outputs(node, layer, len(inputs))
        if hook is not None:  # bodies and port maps, after the ports
            hook(self, node, layer)

    def _write_data(self, node: Node, layer: ET.Element) -> None:
        if isinstance(node, Constant):
            et = node.get_output_element_type(0)
            offset, size = self.weights.add(codec.encode_tensor(node.get_value(), et))
            ET.SubElement(layer, "data", {"element_type": et.get_type_name(),
                                          "shape": ", ".join(str(d) for d in node.get_value().shape),
                                          "offset": str(offset), "size": str(size)})
            return
        if isinstance(node, Parameter):
            ET.SubElement(layer, "data", {"shape": codec.shape_text(node.get_output_partial_shape(0)),
                                          "element_type": node.get_output_element_type(0).get_type_name()})
            return
        attrs = {}
        for name, spec in node._attr_specs.items():
            if spec.kind in ("model", "models", "tensor"):
                continue
            value = getattr(node, name)
            if value is None and name in _IMPLIED:
                value = _IMPLIED[name](node)
            if isinstance(value, list | tuple) and not value:
                value = _window_default(node, name) or value
            if value is None:
                continue
            attrs[spec.ir_name or name] = codec.attr_text(spec.kind, value)
        if attrs:
            ET.SubElement(layer, "data", attrs)

    def _write_inputs(self, node: Node, layer: ET.Element, inputs: list[Output], edges: list) -> None:
        if not inputs:
            return
        elem = ET.SubElement(layer, "input")
        for i, src in enumerate(inputs):
            port = ET.SubElement(elem, "port", {"id": str(i), "precision": codec.precision_name(src.element_type)})
            _dims(port, src.partial_shape)
            write_attributes(port, node._input_rt_info.get(i, {}))
            src_inputs = sum(1 for v in src.node.input_values() if v is not None)
            if isinstance(src.node, Constant) and self.compress and _should_compress(src.node):
                src_inputs = 1  # the value comes from the decompression Convert
            edges.append((self.layer_of[id(src.node)], src_inputs + src.index, self.layer_of[id(node)], i))

    def _write_outputs(self, node: Node, layer: ET.Element, n_inputs: int) -> None:
        if isinstance(node, Result) or node.get_output_size() == 0:
            return
        elem = ET.SubElement(layer, "output")
        for out in node.outputs():
            attrs = {"id": str(n_inputs + out.index), "precision": codec.precision_name(out.element_type)}
            names = out.get_names()
            if names:
                attrs["names"] = codec.join_names(names)
            port = ET.SubElement(elem, "port", attrs)
            _dims(port, out.partial_shape)
            rt_info = out._desc.rt_info  # the plain values (out.rt_info is an RTMap view of OVAny)
            if isinstance(node, Parameter) and not node.get_layout().empty:
                rt_info = {**rt_info, "layout": node.get_layout().to_string()}
            write_attributes(port, rt_info)

    def _write_compressed_constant(self, node: Node, layers: ET.Element, edges: list) -> None:
        """f32 Constant -> Const(f16) + Convert(f32, rt_info decompression), keeping names on the Convert."""
        value = node.get_value().astype(np.float16)
        shape = list(value.shape)
        layer = self._new_layer(layers, None, f"{node.friendly_name}_compressed", "Const", "opset1")
        offset, size = self.weights.add(codec.encode_tensor(value, Type.f16))
        ET.SubElement(layer, "data", {"element_type": "f16", "shape": ", ".join(str(d) for d in shape),
                                      "offset": str(offset), "size": str(size)})
        port = ET.SubElement(ET.SubElement(layer, "output"), "port", {"id": "0", "precision": "FP16"})
        _dims(port, PartialShape(shape))
        const_id = int(layer.get("id", "0"))
        conv = self._new_layer(layers, node, node.friendly_name, "Convert", "opset1")
        ET.SubElement(conv, "data", {"destination_type": "f32"})
        write_attributes(conv, {**node.rt_info, "decompression": ""})
        port = ET.SubElement(ET.SubElement(conv, "input"), "port", {"id": "0", "precision": "FP16"})
        _dims(port, PartialShape(shape))
        self._write_outputs(node, conv, 1)
        edges.append((const_id, 0, self.layer_of[id(node)], 0))


def write_ir(model: Model, xml_path: str | os.PathLike, bin_path: str | os.PathLike | None = None,
             compress_to_fp16: bool = False) -> None:
    """Write ``model`` as IR v11 to ``xml_path`` and its weights to ``bin_path`` (default: beside it)."""
    xml_bytes, bin_bytes = serialize_ir(model, compress_to_fp16)
    xml = Path(xml_path)
    bin_file = Path(bin_path) if bin_path is not None else xml.with_suffix(".bin")
    if xml.parent and not xml.parent.exists():
        xml.parent.mkdir(parents=True, exist_ok=True)
    xml.write_bytes(xml_bytes)
    bin_file.write_bytes(bin_bytes)


def serialize_ir(model: Model, compress_to_fp16: bool = False) -> tuple[bytes, bytes]:
    """``model`` -> (xml bytes, bin bytes) of IR v11."""
    root = ET.Element("net", {"name": model.friendly_name, "version": "11"})
    weights = WeightsBuffer()
    GraphWriter(weights, compress_to_fp16).write(model, root)
    write_model_rt_info(root, _model_rt_info(model))
    ET.indent(root, "\t")
    text = ET.tostring(root, encoding="unicode", short_empty_elements=True)
    return ('<?xml version="1.0"?>\n' + text + "\n").encode("utf-8"), weights.getvalue()


def _model_rt_info(model: Model) -> dict[str, Any]:
    plain = model.rt_info.to_dict()  # plain values (indexing the RTMap gives OVAny)
    return {k: v for k, v in plain.items() if isinstance(v, (str, int, float, bool, dict, list))}
