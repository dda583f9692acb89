"""Runtime info (``<rt_info>``) of the model, of layers and of ports.

Layers and ports hold ``<attribute name="fused_names" version="0" value="a,b"/>`` entries; vinerun
keeps them in ``rt_info`` dicts as strings (``""`` for flags such as ``decompression``; a
``layout`` attribute keeps its ``layout`` text). The model holds nested elements:
``<framework><k value="v"/></framework>`` becomes ``{"framework": {"k": "v"}}``; keys that are
not valid XML names are written as ``<info name="key" value="..."/>``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

#: rt_info keys vinerun writes into IR layers/ports besides plain string entries.
_SKIP_PREFIX = "__"
_XML_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def read_attributes(elem: ET.Element | None) -> dict[str, Any]:
    """Parse a layer's or a port's ``<rt_info>`` element."""
    out: dict[str, Any] = {}
    if elem is None:
        return out
    for a in elem.findall("attribute"):
        name = a.get("name")
        if not name:
            continue
        rest = {k: v for k, v in a.attrib.items() if k not in ("name", "version")}
        if "value" in rest and len(rest) == 1:
            out[name] = rest["value"]
        elif not rest:
            out[name] = ""
        elif len(rest) == 1:
            out[name] = next(iter(rest.values()))
        else:
            out[name] = rest
    return out


def write_attributes(parent: ET.Element, rt_info: dict[str, Any]) -> None:
    """Append an ``<rt_info>`` element for the serializable entries of ``rt_info`` (if any)."""
    items = [(k, v) for k, v in rt_info.items()
             if not k.startswith(_SKIP_PREFIX) and isinstance(v, (str, int, float, bool, list, tuple, dict))]
    if not items:
        return
    elem = ET.SubElement(parent, "rt_info")
    for k, v in items:
        attrs = {"name": k, "version": "0"}
        if isinstance(v, dict):
            attrs.update({str(a): _scalar_text(b) for a, b in v.items()})
        elif k == "layout":
            attrs["layout"] = _scalar_text(v)
        elif v != "":
            attrs["value"] = _scalar_text(v)
        ET.SubElement(elem, "attribute", attrs)


def _scalar_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


def _model_value_text(v: Any) -> str:
    """A model-level rt_info value as OpenVINO writes it: lists space-separated, bools YES/NO."""
    if isinstance(v, bool):
        return "YES" if v else "NO"
    if isinstance(v, (list, tuple)):
        return " ".join(_model_value_text(x) for x in v)
    return str(v)


def read_model_rt_info(elem: ET.Element | None) -> dict[str, Any]:
    """Parse the ``<rt_info>`` under ``<net>`` into nested dicts of strings."""
    out: dict[str, Any] = {}
    if elem is None:
        return out
    for child in elem:
        key = child.get("name") if child.tag == "info" and child.get("name") else child.tag
        if len(child):
            out[key] = read_model_rt_info(child)
        else:
            out[key] = child.get("value", "")
    return out


def write_model_rt_info(parent: ET.Element, rt_info: dict[str, Any]) -> None:
    elem = ET.SubElement(parent, "rt_info")
    _write_nested(elem, rt_info)


def _write_nested(elem: ET.Element, values: dict[str, Any]) -> None:
    for k, v in values.items():
        if k.startswith(_SKIP_PREFIX):
            continue
        key = str(k)
        child = ET.SubElement(elem, key) if _XML_NAME.match(key) else ET.SubElement(elem, "info", {"name": key})
        if isinstance(v, dict):
            _write_nested(child, v)
        else:
            child.set("value", _model_value_text(v))
