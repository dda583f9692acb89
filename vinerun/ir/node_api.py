"""OpenVINO's node-level Python API that sits beside vinerun's own: ``node.evaluate(outputs, inputs)`` on
Tensors, and ``DescriptorTensor`` (what ``node.get_input_tensor(i)`` / ``get_output_tensor(i)`` return).

vinerun's ops implement ``evaluate(inputs) -> outputs`` on arrays; :func:`dual_evaluate` lets the same
method also take OpenVINO's form, which writes into the given output Tensors and returns True.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from vinerun.ir.node import OutputTensorInfo

if TYPE_CHECKING:
    from vinerun.ir.node import Node


def as_array(value: Any) -> Any:
    """An input tensor's elements as vinerun computes with them (Tensors, arrays, anything array-like)."""
    from vinerun.ir.tensor import Tensor, tensor_values

    if isinstance(value, Tensor):  # its elements as vinerun computes with them (strings, bf16, packed types)
        return tensor_values(value)
    data = getattr(value, "data", value)
    return data if isinstance(data, np.ndarray) else np.asarray(data)


def evaluate_into(node: Node, fn: Callable[..., Any], outputs: list[Any], inputs: list[Any]) -> bool:
    """OpenVINO's ``evaluate(output_tensors, input_tensors)``: False when the op has no reference."""
    from vinerun.errors import UnsupportedOpError

    try:
        results = fn(node, [as_array(t) for t in inputs])
    except UnsupportedOpError:
        return False
    if len(outputs) != len(results):
        raise ValueError(f"{node.type_name} '{node.friendly_name}' has {len(results)} outputs; "
                         f"{len(outputs)} output tensors were given")
    write_results(outputs, results)
    return True


def write_results(outputs: list[Any], results: list[Any]) -> None:
    """Write ``results`` into OpenVINO-style output tensors (Tensors, arrays), reshaping them as needed."""
    from vinerun.ir.tensor import Tensor, set_tensor_values

    for out, value in zip(outputs, results, strict=True):
        value = np.asarray(value)
        if isinstance(out, Tensor):
            set_tensor_values(out, value)
            continue
        if hasattr(out, "set_shape") and tuple(out.get_shape()) != value.shape:
            out.set_shape(list(value.shape))
        target = out.data if hasattr(out, "data") else out
        target[...] = value.astype(target.dtype, copy=False)


def dual_evaluate(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an op's ``evaluate(inputs)`` so that ``evaluate(outputs, inputs)`` works as in OpenVINO."""
    if getattr(fn, "_vr_dual", False):
        return fn

    @functools.wraps(fn)
    def evaluate(self: Node, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 2 and not kwargs:
            return evaluate_into(self, fn, list(args[0]), list(args[1]))
        return fn(self, *args, **kwargs)

    evaluate._vr_dual = True  # type: ignore[attr-defined]
    return evaluate


class DescriptorTensor(OutputTensorInfo):
    """The descriptor of one node output (type, shape, names): OpenVINO's ``descriptor.Tensor``."""

    def __init__(self, node: Node, index: int):
        self.node = node
        self.index = index

    def set_names(self, names: set[str]) -> None:
        self.node._set_output_names(self.index, set(names))

    names = property(OutputTensorInfo.get_names, set_names)

    def add_names(self, names: set[str]) -> None:
        self.node._set_output_names(self.index, self.get_names() | set(names))

    def get_any_name(self) -> str:
        names = self.get_names()
        if not names:
            raise RuntimeError("Attempt to get a name for a Tensor without names")
        return min(names)

    any_name = property(get_any_name)

    def get_rt_info(self) -> Any:
        from vinerun.ir.rt_map import RTMap

        return RTMap(self._desc.tensor_rt_info)

    rt_info = property(get_rt_info)

    def get_size(self) -> int:
        """The size in bytes of a tensor of this (static) shape and element type, as OpenVINO's ``size``."""
        count = int(np.prod(list(self.get_shape()), dtype=np.int64))
        return (count * self.get_element_type().bitwidth + 7) // 8

    size = property(get_size)

    # --- value bounds and value symbols (what shape inference may know of the values) ------------
    def get_lower_value(self) -> Any:
        return self._desc.lower_value

    def set_lower_value(self, value: Any) -> None:
        self._desc.lower_value = self._checked_bound(value)

    def get_upper_value(self) -> Any:
        return self._desc.upper_value

    def set_upper_value(self, value: Any) -> None:
        self._desc.upper_value = self._checked_bound(value)

    def _checked_bound(self, value: Any) -> Any:
        ps = self.get_partial_shape()
        shape = list(getattr(value, "shape", ()))
        if ps.rank.is_static and not ps.compatible(shape):
            raise RuntimeError(f"Value bound of shape {shape} does not match the tensor's shape {ps}")
        et = self.get_element_type()
        vt = getattr(value, "element_type", None)
        if vt is not None and et.is_static() and vt != et:
            raise RuntimeError(f"Value bound of type {vt} does not match the tensor's type {et}")
        return value

    def get_value_symbol(self) -> list[Any]:
        return list(self._desc.value_symbol)

    def set_value_symbol(self, value_symbol: list[Any]) -> None:
        self._desc.value_symbol = list(value_symbol)

    def __repr__(self) -> str:
        names = ", ".join(sorted(self.get_names()))
        return (f"<DescriptorTensor: names[{names}] shape{self.get_partial_shape()} "
                f"type: {self.get_element_type().get_type_name()}>")
