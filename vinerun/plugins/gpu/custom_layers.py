"""``CONFIG_FILE``: a user's own kernels for op types, as OpenVINO's GPU custom layers (an XML file naming an
OpenCL kernel per layer type); here the kernel is a Python function, typically launching a Triton kernel.

    <CustomLayer name="Relu" type="SimpleGPU" version="1">
      <Kernel entry="relu">                        <!-- a function of the source file -->
        <Source filename="my_kernels.py"/>         <!-- relative to the config file -->
      </Kernel>
    </CustomLayer>

The function is called as ``entry(inputs, attributes)`` with the node's inputs (device tensors) and attributes
(a dict) and returns the list of outputs. Several ``<CustomLayer>`` elements may sit under one root element.
"""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vinerun.errors import PropertyError

CustomKernel = Callable[[list[Any], dict[str, Any]], list[Any]]


def load_custom_layers(config_file: str) -> dict[str, CustomKernel]:
    """``{op type: entry function}`` from a ``CONFIG_FILE``; errors name the file and what is wrong in it."""
    if not config_file:
        return {}
    path = Path(config_file)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise PropertyError(f"CONFIG_FILE '{config_file}': cannot read it as XML: {e}") from e
    layers = [root] if root.tag == "CustomLayer" else root.findall("CustomLayer")
    found: dict[str, CustomKernel] = {}
    for layer in layers:
        name, kernel = layer.get("name"), layer.find("Kernel")
        source = kernel.find("Source") if kernel is not None else None
        if not name or kernel is None or source is None or not kernel.get("entry") or not source.get("filename"):
            raise PropertyError(f"CONFIG_FILE '{config_file}': each <CustomLayer name=...> needs "
                                "<Kernel entry=...><Source filename=.../></Kernel>")
        found[name] = _entry(path.parent / source.get("filename", ""), kernel.get("entry", ""), config_file)
    return found


def _entry(source: Path, entry: str, config_file: str) -> CustomKernel:
    if not source.is_file():
        raise PropertyError(f"CONFIG_FILE '{config_file}': kernel source {source} does not exist")
    spec = importlib.util.spec_from_file_location(f"vinerun_custom_{source.stem}", source)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as e:  # noqa: BLE001 - the user's file: say which one failed
        raise PropertyError(f"CONFIG_FILE '{config_file}': importing {source} failed: {e}") from e
    fn = getattr(module, entry, None)
    if not callable(fn):
        raise PropertyError(f"CONFIG_FILE '{config_file}': {source} has no function '{entry}'")
    return fn
