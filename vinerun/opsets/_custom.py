"""Builders whose OpenVINO signatures differ from "inputs, then attributes": parameter, constant,
result, read_value and assign."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.core_ops import Constant, Parameter, Result
from vinerun.ir.node import Node
from vinerun.ir.shape import PartialShape, as_partial_shape
from vinerun.ir.tensor import Tensor, tensor_values
from vinerun.ir.types import Type, storage_dtype
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
    if value is None:
        raise ValueError("constant(): value must not be None")
    arr = tensor_values(value) if isinstance(value, Tensor) else np.asarray(value)
    if dtype is None:
        return Constant(arr, name=name, shared_memory=shared_memory)
    et = Type(dtype)
    return Constant(et, list(arr.shape), arr.astype(storage_dtype(et)), name=name)


def result(data: Any, name: str | None = None) -> Result:
    """A model output."""
    return Result(as_input(data), name=name)


def _variable_from_id(variable_id: str, variable_type: Any, variable_shape: Any) -> Variable:
    """A Variable named ``variable_id``; type and shape dynamic unless given."""
    et = Type.dynamic if variable_type is None else Type(variable_type)
    ps = PartialShape.dynamic() if variable_shape is None else as_partial_shape(variable_shape)
    return Variable(VariableInfo(ps, et, variable_id))


def read_value(*args: Any, name: str | None = None, **kwargs: Any) -> Node:
    """OpenVINO's four forms: ``read_value(init_value, variable_id, variable_type=None, variable_shape=None)``,
    ``read_value(variable_id, variable_type=None, variable_shape=None)``, ``read_value(init_value, variable)``
    and ``read_value(variable)``."""
    args = list(args)
    for key in ("init_value", "variable_id", "ov_variable"):
        if key in kwargs:
            args.append(kwargs.pop(key))
    variable_type = kwargs.pop("variable_type", None)
    variable_shape = kwargs.pop("variable_shape", None)
    if kwargs:
        raise TypeError(f"read_value() got unexpected keyword argument(s) {sorted(kwargs)}")
    if not args:
        raise TypeError("read_value() needs a Variable or a variable_id")
    init = None
    if isinstance(args[0], (str, Variable)):
        target, rest = args[0], args[1:]
    else:
        if len(args) < 2 or not isinstance(args[1], (str, Variable)):
            raise TypeError("read_value(init_value, ...) needs a variable_id or a Variable after the initial value")
        init, target, rest = args[0], args[1], args[2:]
    if isinstance(target, Variable):
        if rest:
            raise TypeError("read_value() with a Variable takes no type or shape")
        var = target
    else:
        if len(rest) > 2:
            raise TypeError("read_value() takes at most variable_type and variable_shape after the variable_id")
        variable_type = rest[0] if len(rest) > 0 else variable_type
        variable_shape = rest[1] if len(rest) > 1 else variable_shape
        var = _variable_from_id(target, variable_type, variable_shape)
    if init is None:
        return ReadValue(variable=var, name=name)
    init_out = as_input(init, var.info.data_type if var.info.data_type.is_static() else None)
    if var.info.data_type.is_dynamic():  # the variable takes what the initial value does not leave open
        var.info.data_type = init_out.element_type
    if var.info.data_shape.rank.is_dynamic and not isinstance(target, Variable):
        var.info.data_shape = init_out.partial_shape
    return ReadValue(init_out, variable=var, name=name)


def assign(new_value: Any = None, variable: Variable | str | None = None, name: str | None = None) -> Node:
    """Store ``new_value`` into ``variable`` (a Variable, or the variable_id of a ReadValue's variable).

    Without arguments: an empty Assign (no input, no variable yet), as OpenVINO's default constructor."""
    if new_value is None and variable is None:
        return Assign(name=name)
    if new_value is None or variable is None:
        raise ValidationError("assign() needs both new_value and variable (or neither, for an empty Assign)")
    value = as_input(new_value)
    if isinstance(variable, str):
        variable = Variable(VariableInfo(value.partial_shape, value.element_type, variable))
    return Assign(value, variable=variable, name=name)


CUSTOM = {"parameter": parameter, "constant": constant, "result": result, "read_value": read_value,
          "assign": assign}
#: opset in which each custom builder first appears
CUSTOM_SINCE = {"parameter": 1, "constant": 1, "result": 1, "read_value": 3, "assign": 3}
__all__ = ["CUSTOM", "CUSTOM_SINCE"]
