"""Stateful models (opset6): ``ReadValue`` and ``Assign`` on a ``Variable``.

A variable keeps a value between inferences of one infer request. ``ReadValue`` yields the stored
value (its init input, or zeros, before the first ``Assign``); ``Assign`` stores a new value and is
a sink of the model. The values live in :func:`vinerun.ir.interpreter.current_state`, a dict
keyed by ``variable_id`` that each infer request owns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.interpreter import current_state
from vinerun.ir.node import Attr, Node
from vinerun.ir.registry import register_op
from vinerun.ir.shape import PartialShape, as_partial_shape
from vinerun.ir.types import Type, storage_dtype


class VariableInfo:
    """What a variable holds: ``data_shape``, ``data_type`` and its ``variable_id``."""

    def __init__(self, data_shape: Any = None, data_type: Any = Type.dynamic, variable_id: str = ""):
        self.data_shape = PartialShape.dynamic() if data_shape is None else as_partial_shape(data_shape)
        self.data_type = Type(data_type)
        self.variable_id = variable_id

    def __repr__(self) -> str:
        return f"<VariableInfo: '{self.variable_id}' {self.data_type.get_type_name()}{self.data_shape}>"


class Variable:
    """A model variable (``op.util.Variable``), shared by its ReadValue and Assign nodes."""

    def __init__(self, info: VariableInfo):
        self.info = info

    def get_info(self) -> VariableInfo:
        return self.info

    def update(self, info: VariableInfo) -> None:
        self.info = info

    def update_data_shape(self, shape: Any) -> None:
        self.info.data_shape = as_partial_shape(shape)

    def update_data_type(self, data_type: Any) -> None:
        self.info.data_type = Type(data_type)

    def get_variable_id(self) -> str:
        return self.info.variable_id

    def __repr__(self) -> str:
        return f"<Variable: {self.info!r}>"


def _as_variable(variable: Variable | str, data_type: Any = Type.dynamic, data_shape: Any = None) -> Variable:
    if isinstance(variable, Variable):
        return variable
    return Variable(VariableInfo(data_shape, data_type, str(variable)))


@register_op
class ReadValue(Node):
    """Reads a variable; before the first Assign it yields ``init`` (or zeros of the variable's shape)."""

    type_name, version, num_inputs = "ReadValue", "opset6", (0, 1)
    variable_id = Attr("str")
    variable_type = Attr("type", Type.dynamic)
    variable_shape = Attr("shape", None)

    def __init__(self, *args: Any, variable: Variable | str | None = None, name: str | None = None, **attrs: Any):
        inputs = list(args)
        if inputs and isinstance(inputs[-1], (Variable, str)) and variable is None:
            variable = inputs.pop()
        if variable is None:
            variable = attrs.get("variable_id")
            if variable is None:
                raise ValidationError("ReadValue needs a variable (a Variable or a variable_id)")
        init_et = Type.dynamic
        if inputs and inputs[0] is not None and hasattr(inputs[0], "get_element_type"):
            init_et = inputs[0].get_element_type()
        self.variable = _as_variable(variable, attrs.get("variable_type", init_et), attrs.get("variable_shape"))
        info = self.variable.info
        attrs.update(variable_id=info.variable_id, variable_type=info.data_type, variable_shape=info.data_shape)
        super().__init__(*inputs, name=name, **attrs)

    def infer(self) -> list:
        info = self.variable.info
        et, shape = info.data_type, info.data_shape
        if self.get_input_size():
            iet, ishape = self.get_input_element_type(0), self.get_input_partial_shape(0)
            if not et.compatible(iet):
                raise ValidationError(f"init value type {iet.get_type_name()} differs from variable "
                                      f"'{info.variable_id}' type {et.get_type_name()}")
            if not shape.compatible(ishape):
                raise ValidationError(f"init value shape {ishape} does not fit variable '{info.variable_id}' "
                                      f"shape {shape}")
            et = iet if et.is_dynamic() else et
            shape = ishape if shape.rank.is_dynamic else shape
        return [(et, shape)]

    def evaluate(self, inputs: list) -> list:
        state = current_state()
        info = self.variable.info
        et = self.get_output_element_type(0)
        if info.variable_id in state:
            return [np.asarray(state[info.variable_id]).astype(storage_dtype(et), copy=True)]
        if inputs and inputs[0] is not None:
            return [np.array(inputs[0], dtype=storage_dtype(et), copy=True)]
        shape = info.data_shape
        if not shape.is_static:
            raise ValidationError(f"variable '{info.variable_id}' has no init value and a dynamic shape {shape}")
        return [np.zeros([d.get_length() for d in shape], storage_dtype(et))]

    def get_variable_id(self) -> str:
        return self.variable.info.variable_id

    def get_variable(self) -> Variable:
        return self.variable


@register_op
class Assign(Node):
    """Stores its input into a variable; returns it unchanged. A model sink."""

    type_name, version, num_inputs = "Assign", "opset6", (0, 1)
    variable_id = Attr("str", "")

    def __init__(self, *args: Any, variable: Variable | str | None = None, name: str | None = None, **attrs: Any):
        inputs = list(args)
        if len(inputs) == 2 and variable is None:
            variable = inputs.pop()
        if not inputs and variable is None and not attrs.get("variable_id"):
            # OpenVINO's default-constructed Assign: no input, no output, no variable yet
            self.variable = None
            super().__init__(name=name, **attrs)
            return
        if variable is None:
            variable = attrs.get("variable_id")
            if variable is None:
                raise ValidationError("Assign needs a variable (a Variable or a variable_id)")
        src = inputs[0] if inputs else None
        et = src.get_element_type() if hasattr(src, "get_element_type") else Type.dynamic
        shape = src.get_output_partial_shape(0) if isinstance(src, Node) else getattr(src, "partial_shape", None)
        self.variable = _as_variable(variable, et, shape)
        attrs["variable_id"] = self.variable.info.variable_id
        super().__init__(*inputs, name=name, **attrs)

    def infer(self) -> list:
        if not self.get_input_size():
            return []
        et, shape = self.get_input_element_type(0), self.get_input_partial_shape(0)
        info = self.variable.info
        if info.data_type.is_static() and et.is_static() and info.data_type != et:
            raise ValidationError(f"value type {et.get_type_name()} differs from variable '{info.variable_id}' "
                                  f"type {info.data_type.get_type_name()}")
        return [(et, shape)]

    def evaluate(self, inputs: list) -> list:
        current_state()[self.get_variable_id()] = np.array(inputs[0], copy=True)
        return [inputs[0]]

    def get_variable_id(self) -> str:
        if self.variable is None:
            raise ValidationError(f"Assign '{self.friendly_name}': Variable is not initialized. "
                                  "Variable_id is unavailable")
        return self.variable.info.variable_id

    def get_variable(self) -> Variable:
        return self.variable
