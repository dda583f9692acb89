"""``VariableState``: the value a stateful model keeps between inferences of one request.

A device keeps each request's variables in a dict ``{variable_id: array}`` (what ReadValue and
Assign read and write through :func:`vinerun.ir.interpreter.current_state`). A missing entry means
"not set": the next ReadValue yields its init input (or zeros). :func:`variable_states` builds the
user-facing handles over such a dict for any model, so every device gets the same behaviour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vinerun.errors import InputError
from vinerun.ir.core_ops import Constant
from vinerun.ir.interpreter import evaluate_node
from vinerun.ir.model import Model, topological_order
from vinerun.ir.node import Output
from vinerun.ir.tensor import Tensor, tensor_values
from vinerun.ir.types import storage_dtype
from vinerun.ops.state import ReadValue, VariableInfo


class VariableState:
    """One variable of an infer request: ``name``, ``state`` (get/set a Tensor) and ``reset()``.

    >>> state = request.query_state()[0]
    >>> state.name, state.state.data.shape
    ('acc', (2, 3))
    >>> state.state = ov.Tensor(np.zeros((2, 3), np.float32))
    >>> state.reset()                        # the next inference starts from the initial value
    """

    def __init__(self, info: VariableInfo, store: dict[str, Any], initial: Callable[[], np.ndarray]):
        self._info = info
        self._store = store
        self._initial = initial

    def get_name(self) -> str:
        return self._info.variable_id

    name = property(get_name)

    def get_state(self) -> Tensor:
        """The current value: the stored memory itself (writes to it change the state, as in OpenVINO), or a
        copy of the initial value while none is stored."""
        value = self._store.get(self.name)
        value = self._initial() if value is None else value
        et = self._info.data_type
        if et.is_static() and value.dtype != storage_dtype(et):
            value = value.astype(storage_dtype(et))
        return Tensor.wrap(value, et if et.is_static() else None)

    def set_state(self, value: Tensor | np.ndarray) -> None:
        """Store a copy of ``value``, converted to the variable's element type; its shape must fit the variable's."""
        arr = tensor_values(value) if isinstance(value, Tensor) else np.asarray(value)
        et, shape = self._info.data_type, self._info.data_shape
        if et.is_static() and arr.dtype != storage_dtype(et):
            want = np.dtype(storage_dtype(et))
            if arr.dtype.kind not in "biuf" or want.kind not in "biuf":
                got = Tensor.wrap(arr).element_type.get_type_name()
                raise InputError(f"Variable '{self.name}' holds {et.get_type_name()}; cannot set a {got} state")
            # numbers convert as OpenVINO's CPU plugin does: floats round to the nearest integer
            arr = (np.rint(arr) if arr.dtype.kind == "f" and want.kind in "biu" else arr).astype(want)
        if shape.rank.is_static and (len(arr.shape) != len(shape) or not shape.compatible(list(arr.shape))):
            raise InputError(f"Variable '{self.name}' has shape {shape}; cannot set a state of shape "
                             f"{list(arr.shape)}")
        self._store[self.name] = np.array(arr, copy=True)

    state = property(get_state, set_state)

    def reset(self) -> None:
        """Forget the stored value: the next inference reads the initial value again."""
        self._store.pop(self.name, None)

    def __repr__(self) -> str:
        return f"<VariableState: '{self.name}' {self._info.data_type.get_type_name()}{self._info.data_shape}>"


def constant_value(output: Output) -> np.ndarray | None:
    """The value of ``output`` if it depends on Constants only (evaluated with the reference ops)."""
    order = topological_order([output.node])
    if any(n.get_input_size() == 0 and not isinstance(n, Constant) for n in order):
        return None  # a Parameter, a ReadValue without init, a RandomNormal...
    if any(isinstance(n, ReadValue) for n in order):
        return None
    values: dict[tuple[int, int], Any] = {}
    for node in order:
        args = [None if o is None else values[(id(o.node), o.index)] for o in node.input_values()]
        for i, v in enumerate(evaluate_node(node, args)):
            values[(id(node), i)] = v
    return np.asarray(values[(id(output.node), output.index)])


def _zeros(info: VariableInfo) -> np.ndarray:
    shape = info.data_shape
    dims = [0] if shape.rank.is_dynamic else [d.get_length() if d.is_static else 0 for d in shape]
    dtype = storage_dtype(info.data_type) if info.data_type.is_static() else np.float32
    return np.zeros(dims, dtype)


def variable_states(model: Model, store: dict[str, Any]) -> list[VariableState]:
    """Handles for every variable of ``model`` over one request's ``store``.

    The initial value is the ReadValue's init input when it depends on constants only, else zeros
    of the variable's shape (dynamic dimensions count as 0), as the first inference would see them
    before any input arrives.
    """
    readers: dict[str, ReadValue] = {}
    for node in model.get_ordered_ops():
        if isinstance(node, ReadValue):
            readers.setdefault(node.get_variable_id(), node)
    states = []
    for var in model.get_variables():
        info = var.get_info()
        reader = readers.get(info.variable_id)

        def initial(info: VariableInfo = info, reader: ReadValue | None = reader) -> np.ndarray:
            if reader is not None and reader.get_input_size():
                value = constant_value(reader.input_value(0))
                if value is not None:
                    return np.array(value, copy=True)
            return _zeros(info)

        states.append(VariableState(info, store, initial))
    return states
