"""Builders whose OpenVINO signatures differ from "inputs, then attributes": parameter, constant,
result, read_value and assign."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.node import Node
from vinerun.ir.shape import PartialShape, as_partial_shape
from vinerun.ir.tensor import Tensor
from vinerun.ir.types import Type
from vinerun.ops.state import Assign, ReadValue, Variable, VariableInfo
from vinerun.opsets._factory import as_input


def parameter(shape: Any, dtype: Any = Type.f32, name: str | None = None) -> Parameter:
    """A model input; ``name`` is its friendly name and its tensor name."""
    node = Parameter(Type(dtype), as_partial_shape(shape) if shape is not None else PartialShape.dynamic(),
                     name=name)
    if name:
        node.output(0).set_names({name})
    return node


def constant(value: Any, dtype: Any = None, optimize: bool = True, name: str | None = None, *,
             shared_memory: bool = False) -> Constant:
    """A constant from an array, list, scalar or Tensor; ``dtype`` converts it."""
    arr = value.data if isinstance(value, Tensor) else np.asarray(value)
    if dtype is None:
        return Constant(arr, name=name)
    et = Type(dtype)
    return Constant(et, list(arr.shape), arr.astype(et.to_dtype()), name=name)


def result(data: Any, name: str | None = None) -> Result:
    """A model output."""
    return Result(as_input(data), name=name)


def _variable(args: list[Any], variable_type: Any, variable_shape: Any) -> tuple[Any, Variable]:
    """Split ``read_value``'s overloaded positional args into (init value or None, Variable)."""
    init = None
    var = None
    for a in args:
        if isinstance(a, Variable):
            var = a
        elif isinstance(a, str) and var is None:
            var = Variable(VariableInfo(variable_shape, variable_type or Type.dynamic, a))
        elif a is not None:
            init = a
    if var is None:
        raise ValidationError("read_value needs a Variable or a variable_id")
    return init, var


def read_value(*args: Any, variable_type: Any = None, variable_shape: Any = None, name: str | None = None) -> Node:
    """``read_value(init_value, variable)``, ``read_value(variable)`` or
    ``read_value(init_value, variable_id, variable_type, variable_shape)``."""
    args = list(args)
    if len(args) >= 3 and isinstance(args[1], str):
        variable_type = args[2]
        variable_shape = args[3] if len(args) > 3 else variable_shape
        args = args[:2]
    init, var = _variable(args, variable_type, variable_shape)
    if init is None:
        return ReadValue(variable=var, name=name)
    init_out = as_input(init, var.info.data_type if var.info.data_type.is_static() else None)
    if var.info.data_type.is_dynamic():
        var.info.data_type = init_out.element_type
    if var.info.data_shape.rank.is_dynamic and variable_shape is None and not isinstance(args[-1], Variable):
        var.info.data_shape = init_out.partial_shape
    return ReadValue(init_out, variable=var, name=name)


def assign(new_value: Any, variable: Variable | str, name: str | None = None) -> Node:
    """Store ``new_value`` into ``variable`` (a Variable, or the variable_id of a ReadValue's variable)."""
    value = as_input(new_value)
    if isinstance(variable, str):
        variable = Variable(VariableInfo(value.partial_shape, value.element_type, variable))
    return Assign(value, variable=variable, name=name)


CUSTOM = {"parameter": parameter, "constant": constant, "result": result, "read_value": read_value,
          "assign": assign}
#: opset in which each custom builder first appears
CUSTOM_SINCE = {"parameter": 1, "constant": 1, "result": 1, "read_value": 3, "assign": 3}
__all__ = ["CUSTOM", "CUSTOM_SINCE"]
