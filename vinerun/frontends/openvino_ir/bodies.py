"""Layers with bodies: TensorIterator, Loop (``<body>``, ``<port_map>``, ``<back_edges>``) and If
(``<then_body>``/``<else_body>`` with their port maps).

A port map ``<input external_port_id="k" internal_layer_id="L" [axis start end stride part_size]/>``
wires op input ``k`` to the body Parameter of layer ``L`` (sliced when ``axis`` is given; merged
when a back edge leads into ``L``); ``<output external_port_id="p" internal_layer_id="R" [axis ...]/>``
makes body Result ``R`` the op output on port ``p`` (concatenated over iterations when ``axis`` is
given). Loop's ``purpose="current_iteration"`` / ``"execution_condition"`` entries give its
``special_body_ports``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from vinerun.frontends.openvino_ir.reader import LAYER_HOOKS, GraphReader
from vinerun.frontends.openvino_ir.writer import WRITE_HOOKS, GraphWriter
from vinerun.ir.model import Model
from vinerun.ir.node import Node, Output
from vinerun.ir.registry import get_op_class
from vinerun.ops.control_flow import (
    BodyOutputDescription,
    ConcatOutputDescription,
    InvariantInputDescription,
    MergedInputDescription,
    SliceInputDescription,
)

_SLICE_KEYS = ("start", "stride", "part_size", "end", "axis")
_SLICE_DEFAULTS = {"start": 0, "stride": 1, "part_size": 1, "end": -1}


def _int(e: ET.Element, key: str, default: int | None = None) -> int:
    v = e.get(key)
    if v is None:
        if default is None:
            raise ValueError(f"<{e.tag}> lacks '{key}'")
        return default
    return int(v)


def _slice_values(e: ET.Element) -> list[int]:
    return [_int(e, key, _SLICE_DEFAULTS.get(key)) for key in _SLICE_KEYS]


def _read_body(reader: GraphReader, layer: ET.Element, tag: str) -> tuple[Model, dict[str, int], dict[str, int]]:
    """The body model, and maps from its layer ids to parameter / result indices."""
    elem = layer.find(tag)
    if elem is None:
        raise reader.ctx.fail(layer, f"has no <{tag}>")
    sub = GraphReader(reader.ctx, elem, f"{layer.get('name')}/{tag}")
    body = sub.build()
    params = {lid: i for i, p in enumerate(body.get_parameters()) for lid, n in sub.nodes.items() if n is p}
    results = {lid: i for i, r in enumerate(body.get_results()) for lid, n in sub.nodes.items() if n is r}
    return body, params, results


def _port_index(reader: GraphReader, layer: ET.Element, kind: str, port_id: str) -> int:
    ids = [p.get("id") for p in reader.ports(layer, kind)]
    if port_id not in ids:
        raise reader.ctx.fail(layer, f"port map names {kind} port {port_id}, which the layer does not have")
    return ids.index(port_id)


def _read_iterating(reader: GraphReader, layer: ET.Element, inputs: list[Output]) -> Node:
    body, params, results = _read_body(reader, layer, "body")
    back = {}
    back_elem = layer.find("back_edges")
    for e in [] if back_elem is None else back_elem.findall("edge"):
        back[e.get("to-layer", "")] = results[e.get("from-layer", "")]
    port_map = layer.find("port_map")
    ins: list[Any] = []
    outs: list[Any] = []
    special = [-1, -1]
    for e in [] if port_map is None else list(port_map):
        lid, ext = e.get("internal_layer_id", ""), e.get("external_port_id", "-1")
        if e.get("purpose") == "current_iteration":
            special[0] = params[lid]
            continue
        if e.get("purpose") == "execution_condition":
            special[1] = results[lid]
            continue
        if e.tag == "input":
            k, p = _port_index(reader, layer, "input", ext), params[lid]
            if e.get("axis") is not None:
                ins.append(SliceInputDescription(k, p, *_slice_values(e)))
            elif lid in back:
                ins.append(MergedInputDescription(k, p, back[lid]))
            else:
                ins.append(InvariantInputDescription(k, p))
        elif e.tag == "output":
            k, r = _port_index(reader, layer, "output", ext), results[lid]
            if e.get("axis") is not None:
                outs.append(ConcatOutputDescription(r, k, *_slice_values(e)))
            else:
                outs.append(BodyOutputDescription(r, k))
    cls = get_op_class(layer.get("type", ""), layer.get("version"))
    attrs: dict[str, Any] = {"body": body, "input_descriptions": tuple(ins), "output_descriptions": tuple(outs)}
    if layer.get("type") == "Loop":
        attrs["special_body_ports"] = special
    return cls(*inputs, name=layer.get("name"), **attrs)


def _read_if(reader: GraphReader, layer: ET.Element, inputs: list[Output]) -> Node:
    attrs: dict[str, Any] = {}
    for branch in ("then", "else"):
        body, params, results = _read_body(reader, layer, f"{branch}_body")
        port_map = layer.find(f"{branch}_port_map")
        ins, outs = [], []
        for e in [] if port_map is None else list(port_map):
            lid, ext = e.get("internal_layer_id", ""), e.get("external_port_id", "-1")
            if e.tag == "input":
                ins.append(InvariantInputDescription(_port_index(reader, layer, "input", ext), params[lid]))
            elif e.tag == "output":
                outs.append(BodyOutputDescription(results[lid], _port_index(reader, layer, "output", ext)))
        attrs.update({f"{branch}_body": body, f"{branch}_inputs": tuple(ins), f"{branch}_outputs": tuple(outs)})
    cls = get_op_class("If", layer.get("version"))
    return cls(*inputs, name=layer.get("name"), **attrs)


# --- writing -----------------------------------------------------------------------------------
def _write_body(writer: GraphWriter, body: Model, parent: ET.Element, tag: str) -> tuple[list[int], list[int]]:
    """Write ``body`` under ``<tag>``; return the layer ids of its parameters and results."""
    sub = GraphWriter(writer.weights, writer.compress)
    elem = ET.SubElement(parent, tag)
    sub.write(body, elem)
    ET.SubElement(elem, "rt_info")
    return ([sub.layer_of[id(p)] for p in body.get_parameters()],
            [sub.layer_of[id(r)] for r in body.get_results()])


def _n_inputs(node: Node) -> int:
    return sum(1 for v in node.input_values() if v is not None)


def _slice_attrs(d: Any) -> dict[str, str]:
    return {key: str(getattr(d, key)) for key in _SLICE_KEYS}


def _write_iterating(writer: GraphWriter, node: Node, layer: ET.Element) -> None:
    port_map = ET.SubElement(layer, "port_map")
    back_edges = ET.SubElement(layer, "back_edges")
    n_in = _n_inputs(node)
    param_ids, result_ids = _write_body(writer, node.body, layer, "body")
    for d in node.input_descriptions:
        attrs = {"external_port_id": str(d.input_index), "internal_layer_id": str(param_ids[d.body_parameter_index])}
        if isinstance(d, SliceInputDescription):
            attrs.update(_slice_attrs(d))
        if isinstance(d, MergedInputDescription):
            ET.SubElement(back_edges, "edge", {"from-layer": str(result_ids[d.body_value_index]),
                                               "to-layer": attrs["internal_layer_id"]})
        ET.SubElement(port_map, "input", attrs)
    for d in node.output_descriptions:
        attrs = {"external_port_id": str(n_in + d.output_index),
                 "internal_layer_id": str(result_ids[d.body_value_index])}
        if isinstance(d, ConcatOutputDescription):
            attrs.update(_slice_attrs(d))
        ET.SubElement(port_map, "output", attrs)
    if node.type_name == "Loop":
        it, cond = node.special_body_ports
        if it >= 0:
            ET.SubElement(port_map, "input", {"external_port_id": "-1", "internal_layer_id": str(param_ids[it]),
                                              "purpose": "current_iteration"})
        if cond >= 0:
            ET.SubElement(port_map, "output", {"external_port_id": "-1", "internal_layer_id": str(result_ids[cond]),
                                               "purpose": "execution_condition"})


def _write_if(writer: GraphWriter, node: Node, layer: ET.Element) -> None:
    n_in = _n_inputs(node)
    for branch in ("then", "else"):
        param_ids, result_ids = _write_body(writer, getattr(node, f"{branch}_body"), layer, f"{branch}_body")
        port_map = ET.SubElement(layer, f"{branch}_port_map")
        for d in getattr(node, f"{branch}_inputs"):
            ET.SubElement(port_map, "input", {"external_port_id": str(d.input_index),
                                              "internal_layer_id": str(param_ids[d.body_parameter_index])})
        for d in getattr(node, f"{branch}_outputs"):
            ET.SubElement(port_map, "output", {"external_port_id": str(n_in + d.output_index),
                                               "internal_layer_id": str(result_ids[d.body_value_index])})


LAYER_HOOKS.update({"TensorIterator": _read_iterating, "Loop": _read_iterating, "If": _read_if})
WRITE_HOOKS.update({"TensorIterator": _write_iterating, "Loop": _write_iterating, "If": _write_if})
