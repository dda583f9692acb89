"""The three ops every graph has: Parameter, Constant and Result (opset1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.layout import Layout
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape, as_partial_shape
from vinerun.ir.types import Type, storage_dtype


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
        # the declared shape, as OpenVINO's: set_partial_shape shows here before types are re-inferred
        return self.shape if self.shape is not None else self.get_output_partial_shape(0)

    def set_partial_shape(self, shape: Any) -> None:
        self.shape = as_partial_shape(shape)

    partial_shape = property(get_partial_shape, set_partial_shape)

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

    def __init__(self, value: Any = None, shape: Any = None, values: Any = None, name: str | None = None, *,
                 shared_memory: bool | None = None, array: Any = None, tensor: Any = None, **kw: Any):
        if value is None:  # OpenVINO's keyword forms: Constant(array=...), Constant(tensor=...)
            value = array if array is not None else tensor
        if isinstance(value, (Type, str)) and shape is not None:
            et = Type(value)
            dims = [int(d) for d in shape]
            if values is None:
                arr = np.zeros(dims, storage_dtype(et))
            else:
                flat = np.asarray(values, dtype=storage_dtype(et))
                # as OpenVINO: one value fills the shape, otherwise exactly shape_size values
                if flat.size != 1 and flat.size != int(np.prod(dims, dtype=np.int64)):
                    raise ValidationError(f"Constant: {flat.size} values do not fill shape {dims}")
                arr = np.full(dims, flat.reshape(-1)[0], storage_dtype(et)) if flat.size == 1 else flat.reshape(dims)
        else:
            from vinerun.ir.tensor import Tensor, tensor_values

            if value is None:
                raise ValueError("Constant: no value given")
            arr = tensor_values(value) if isinstance(value, Tensor) else np.asarray(value)
            if arr.dtype.kind in "US":
                arr = arr.astype(object)
            elif shared_memory and isinstance(value, np.ndarray) and not arr.flags.c_contiguous:
                raise RuntimeError("SHARED MEMORY MODE FOR THIS CONSTANT IS NOT APPLICABLE! "
                                   "Passed numpy array must be C contiguous.")
            elif shared_memory is False and isinstance(value, (np.ndarray, Tensor)):
                arr = arr.copy()  # shared_memory=False asks for a copy (OpenVINO's default for user code);
                # left out, vinerun's own readers keep their (possibly memory-mapped) arrays without one
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

    def get_byte_size(self) -> int:
        return int(self.value.nbytes)

    def get_tensor_view(self) -> Any:
        from vinerun.ir.tensor import Tensor

        # the constant's own array (any layout, strings included); sub-byte types are packed into a copy
        return Tensor.wrap(self.value, self.get_output_element_type(0))

    tensor_view = property(get_tensor_view)

    def get_strides(self) -> Any:
        """Byte strides of the value (OpenVINO's ``Strides``)."""
        from vinerun.ir.coordinates import Strides

        return Strides(self.value.strides)

    strides = property(get_strides)

    def get_value_strings(self) -> list[str]:
        """Every element as text (string constants as their strings)."""
        flat = self.value.reshape(-1)
        return [v.decode() if isinstance(v, bytes) else str(v) for v in flat.tolist()]

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

    @property
    def layout(self) -> Layout:
        """The layout of this model output (empty unless set)."""
        return self.__dict__.get("_layout") or Layout()

    @layout.setter
    def layout(self, layout: Layout | str) -> None:
        self._layout = layout if isinstance(layout, Layout) else Layout(layout)

    def get_layout(self) -> Layout:
        return self.layout

    def set_layout(self, layout: Layout | str) -> None:
        self.layout = layout

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
