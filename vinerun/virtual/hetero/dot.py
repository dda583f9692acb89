"""GraphViz files of a HETERO split, as OpenVINO writes them: ``hetero_affinity_<model>.dot`` (each
node coloured by its device) and ``hetero_subgraphs_<model>.dot`` (one cluster per subgraph).
Rendered to SVG beside them when the ``dot`` program is installed.

>>> write_dot_files(model, affinity, subgraphs, directory=".")
[PosixPath('hetero_affinity_speech.dot'), PosixPath('hetero_subgraphs_speech.dot')]
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.virtual.hetero.partition import Subgraph

log = logging.getLogger("vinerun")

_COLORS = ["#a6cee3", "#fdbf6f", "#b2df8a", "#fb9a99", "#cab2d6", "#ffff99", "#1f78b4", "#33a02c"]
_FREE_COLOR = "#eeeeee"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _node_line(node: Node, device: str | None, color: str) -> str:
    parts = [node.friendly_name, node.type_name, *([device] if device else [])]
    label = '"' + "\\n".join(_quote(p)[1:-1] for p in parts) + '"'
    return f"  n{id(node)} [label={label} fillcolor={_quote(color)}];"


def _palette(devices: list[str]) -> dict[str, str]:
    return {d: _COLORS[i % len(_COLORS)] for i, d in enumerate(dict.fromkeys(devices))}


def _edges(order: list[Node]) -> list[str]:
    return [f"  n{id(o.node)} -> n{id(n)};" for n in order for o in n.input_values() if o is not None]


def affinity_dot(model: Model, affinity: dict[Node, str], devices: list[str]) -> str:
    """Every node, filled with its device's colour (Parameters, Constants and Results as their neighbours')."""
    order = model.get_ordered_ops()
    color = _palette([*devices, *affinity.values()])
    lines = [f"digraph {_quote(model.friendly_name)} {{", "  node [shape=box style=filled];"]
    lines += [_node_line(n, affinity.get(n), color.get(affinity.get(n, ""), _FREE_COLOR)) for n in order]
    lines += _edges(order)
    lines.append("}")
    return "\n".join(lines) + "\n"


def subgraphs_dot(model: Model, subgraphs: list[Subgraph[Node]], devices: list[str]) -> str:
    """One cluster per subgraph (``subgraph<i>: <device>``); Parameters, Constants and Results outside."""
    order = model.get_ordered_ops()
    color = _palette([*devices, *(s.device for s in subgraphs)])
    inside = {n for s in subgraphs for n in s.nodes}
    lines = [f"digraph {_quote(model.friendly_name)} {{", "  node [shape=box style=filled];"]
    for i, s in enumerate(subgraphs):
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f"    label={_quote(f'subgraph{i}: {s.device}')}; style=rounded;")
        lines += ["  " + _node_line(n, None, color[s.device]) for n in s.nodes]
        lines.append("  }")
    lines += [_node_line(n, None, _FREE_COLOR) for n in order if n not in inside]
    lines += _edges(order)
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_dot_files(model: Model, affinity: dict[Node, str], subgraphs: list[Subgraph[Node]],
                    devices: list[str], directory: str | Path = ".") -> list[Path]:
    """Write both files into ``directory`` (and their SVGs when Graphviz's ``dot`` is installed)."""
    folder = Path(directory)
    name = model.friendly_name
    files = [folder / f"hetero_affinity_{name}.dot", folder / f"hetero_subgraphs_{name}.dot"]
    files[0].write_text(affinity_dot(model, affinity, devices), encoding="utf-8")
    files[1].write_text(subgraphs_dot(model, subgraphs, devices), encoding="utf-8")
    log.info("HETERO: wrote %s and %s", files[0], files[1])
    render_svg(files)
    return files


def render_svg(files: list[Path]) -> list[Path]:
    """``<file>.svg`` for each .dot file through Graphviz's ``dot``; nothing when it is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        return []
    made = []
    for f in files:
        svg = f.with_suffix(".svg")
        try:
            subprocess.run([dot, "-Tsvg", str(f), "-o", str(svg)], check=True, capture_output=True, timeout=120)
            made.append(svg)
        except (OSError, subprocess.SubprocessError) as e:
            log.warning("HETERO: could not render %s to SVG with %s: %s", f, dot, e)
    return made
