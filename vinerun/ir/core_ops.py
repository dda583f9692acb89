"""The three ops every graph has: Parameter, Constant and Result (opset1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.layout import Layout
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape, as_partial_shape
from vinerun.ir.types import Type


@register_op
class Parameter(Node):
    """A model input. ``Parameter(Type.f32, [1, 3, -1, -1])``."""

    type_name, version, num_inputs = "Parameter", "opset1", (0, 0)
    element_type = Attr("type", Type.dynamic)
    shape = Attr("shape", None)  # type: ignore[assignment]

    def __init__(self, element_type: Any = Type.dynamic, shape: Any = None, name: str | None = None, **kw: Any):
        super().__init__(name=name, element_type=element_type,
                         shape=PartialShape.dynamic() if shape is None else as_partial_shape(shape), **kw)
        self.layout = Layout()

    def get_partial_shape(self) -> PartialShape:
        return self.get_output_partial_shape(0)

    def set_partial_shape(self, shape: Any) -> None:
        self.shape = as_partial_shape(shape)

    def set_element_type(self, element_type: Any) -> None:
        self.element_type = Type(element_type)

    def get_layout(self) -> Layout:
        return self.layout

    def set_layout(self, layout: Layout | str) -> None:
        self.layout = layout if isinstance(layout, Layout) else Layout(layout)

    def infer(self) -> list:
        return [(self.element_type, self.shape)]


@register_op
class Constant(Node):
    """A constant tensor. ``Constant(np.array(...))`` or ``Constant(Type.f32, [2], [1.0, 2.0])``."""

    type_name, version, num_inputs = "Constant", "opset1", (0, 0)
    value = Attr("tensor", None)

    def __init__(self, value: Any, shape: Any = None, values: Any = None, name: str | None = None, **kw: Any):
        if isinstance(value, (Type, str)) and shape is not None:
            et = Type(value)
            dims = [int(d) for d in shape]
            data = np.zeros(dims, et.to_dtype()) if values is None else np.broadcast_to(
                np.asarray(values, dtype=et.to_dtype()), dims).copy()
            arr = data
        else:
            from vinerun.ir.tensor import Tensor

            arr = value.data if isinstance(value, Tensor) else np.asarray(value)
            if arr.dtype.kind in "US":
                arr = arr.astype(object)
        self._etype = Type(arr.dtype) if not isinstance(value, (Type, str)) else Type(value)
        super().__init__(name=name, value=arr, **kw)

    def get_value(self) -> np.ndarray:
        return self.value

    def get_data(self) -> np.ndarray:
        return self.value

    @property
    def data(self) -> np.ndarray:
        return self.value

    def get_vector(self) -> list:
        return self.value.reshape(-1).tolist()

    def infer(self) -> list:
        if getattr(self, "_etype", None) is None:
            self._etype = Type(self.value.dtype)
        return [(self._etype, PartialShape(self.value.shape))]

    def evaluate(self, inputs: list) -> list:
        return [self.value]


@register_op
class Result(Node):
    """A model output; its tensor names are those of the output it reads."""

    type_name, version, num_inputs = "Result", "opset1", (1, 1)

    def infer(self) -> list:
        src = self.input_value(0)
        return [(src.element_type, src.partial_shape)]

    def _output_names(self, i: int) -> set[str]:
        return self.input_value(0).get_names()

    def _set_output_names(self, i: int, names: set[str]) -> None:
        self.input_value(0).node._set_output_names(self.input_value(0).index, names)

    def evaluate(self, inputs: list) -> list:
        return [inputs[0]]


def check_input_count(node: Node, n: int) -> None:
    if node.get_input_size() != n:
        raise ValidationError(f"{node.type_name} '{node.friendly_name}' needs {n} inputs, has {node.get_input_size()}")
