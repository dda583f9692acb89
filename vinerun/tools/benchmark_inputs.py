"""Input data for ``vinerun benchmark``: which shapes each input gets, and seeded random values.

Values follow benchmark_app: uniform in [0, 255] (clipped to what the element type holds),
booleans 0/1; the generator is seeded, so two runs feed the same data.

>>> from vinerun import opset13 as ops, Model
>>> p = ops.parameter([2, 3], name="x")
>>> infos = input_infos(Model([ops.relu(p)], [p]).inputs, {})
>>> sets = fill_inputs(infos)
>>> sets[0]["x"].shape, sets[0]["x"].dtype
((2, 3), dtype('float32'))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vinerun.errors import InputError, NotSupportedError
from vinerun.ir.layout import Layout
from vinerun.ir.node import Output
from vinerun.ir.shape import PartialShape
from vinerun.ir.types import Type


@dataclass
class InputInfo:
    """One model input as the benchmark sees it: the data shapes it will be fed with."""

    name: str
    element_type: Type
    partial_shape: PartialShape
    layout: Layout = field(default_factory=Layout)
    data_shapes: list[list[int]] = field(default_factory=list)

    @property
    def is_dynamic(self) -> bool:
        return not self.partial_shape.is_static


def port_name(port: Output) -> str:
    """The name benchmark_app shows for an input or output: its tensor name, else the node's."""
    return port.get_any_name() if port.get_names() else port.node.friendly_name


def input_infos(inputs: list[Output], data_shapes: dict[int, list[list[int]]]) -> list[InputInfo]:
    """Pair every input with the static shapes to generate (``-data_shape``, else its own shape)."""
    infos = []
    for i, port in enumerate(inputs):
        name = port_name(port)
        pshape = port.get_partial_shape()
        shapes = data_shapes.get(i)
        if shapes:
            for s in shapes:
                if not pshape.compatible(PartialShape(s)):
                    raise InputError(f"-data_shape: shape {s} for input '{name}' does not fit its model shape "
                                     f"{pshape}")
        elif pshape.is_static:
            shapes = [[int(d) for d in pshape.to_shape()]]
        else:
            raise InputError(f"Input '{name}' has a dynamic shape {pshape}: give the shape of its data with "
                             f"-data_shape (e.g. -data_shape \"{name}[...]\") or fix it with -shape")
        layout = port.node.get_layout() if hasattr(port.node, "get_layout") else Layout()
        infos.append(InputInfo(name, port.get_element_type(), pshape, layout, [list(s) for s in shapes]))
    return infos


def random_array(element_type: Type, shape: list[int], rng: np.random.Generator, name: str = "") -> np.ndarray:
    """Seeded random data of ``element_type``: [0, 255] clipped to the type's range; bool 0/1."""
    if element_type.is_dynamic():
        raise InputError(f"Input '{name}' has a dynamic element type: cannot generate data for it")
    type_name = element_type.get_type_name()
    dtype = element_type.to_dtype()
    if type_name == "string":
        raise NotSupportedError(f"Input '{name}' is a string tensor: random data for strings is not supported")
    if type_name in ("boolean", "u1"):
        return rng.integers(0, 2, size=shape).astype(dtype)
    if element_type.is_real():
        high = 255.0 if element_type.bitwidth >= 16 else 4.0  # keep 8- and 4-bit floats finite
        return rng.uniform(0.0, high, size=shape).astype(dtype)
    bits = element_type.bitwidth
    signed = element_type.is_signed()
    high = min(255, (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1)
    return rng.integers(0, high, size=shape, endpoint=True).astype(dtype)


def fill_inputs(infos: list[InputInfo], seed: int = 0) -> list[dict[str, np.ndarray]]:
    """One input set per data-shape group (inputs with fewer shapes cycle through theirs)."""
    rng = np.random.default_rng(seed)
    count = max((len(info.data_shapes) for info in infos), default=1)
    sets: list[dict[str, np.ndarray]] = []
    for k in range(max(count, 1)):
        sets.append({info.name: random_array(info.element_type, info.data_shapes[k % len(info.data_shapes)],
                                             rng, info.name) for info in infos})
    return sets


def batch_size(infos: list[InputInfo]) -> int:
    """Frames per inference: the ``N`` dimension (from the layout; 4-D inputs without one are taken as
    NCHW, as benchmark_app does), else 1."""
    for info in infos:
        shape = info.data_shapes[0]
        layout = info.layout
        if not layout.empty and layout.has_name("N"):
            return int(shape[layout.get_index_by_name("N")])
        if layout.empty and len(shape) == 4:
            return int(shape[0])
    return 1
