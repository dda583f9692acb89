"""Element-type conversions between NumPy / Python types and :class:`Type`, and making nodes from
plain values (OpenVINO's ``openvino.utils.types``)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from vinerun.ir.core_ops import Constant
from vinerun.ir.node import Node, Output
from vinerun.ir.types import Type

log = logging.getLogger(__name__)

#: (element type, NumPy type) pairs, in the order lookups try them
openvino_to_numpy_types_map: list[tuple[Type, Any]] = [
    (Type.boolean, bool), (Type.boolean, np.bool_), (Type.f16, np.float16), (Type.f32, np.float32),
    (Type.f64, np.float64), (Type.i8, np.int8), (Type.i16, np.int16), (Type.i32, np.int32), (Type.i64, np.int64),
    (Type.u8, np.uint8), (Type.u16, np.uint16), (Type.u32, np.uint32), (Type.u64, np.uint64),
    (Type.bf16, np.uint16), (Type.string, str), (Type.string, np.str_), (Type.string, bytes),
    (Type.string, np.bytes_),
]
openvino_to_numpy_types_str_map: list[tuple[str, Any]] = [
    (t.get_type_name(), np_type) for t, np_type in openvino_to_numpy_types_map
]


def _is_unsized(data_type: Any, py_type: type) -> bool:
    return data_type is py_type


def get_element_type(data_type: Any) -> Type:
    """The element type of a NumPy dtype / scalar type; Python ``int`` and ``float`` become i32 and f32."""
    if _is_unsized(data_type, int):
        log.warning("Converting int type of undefined bitwidth to 32-bit integer.")
        return Type.i32
    if _is_unsized(data_type, float):
        log.warning("Converting float type of undefined bitwidth to 32-bit float.")
        return Type.f32
    for ov_type, np_type in openvino_to_numpy_types_map:
        if np_type == data_type:
            return ov_type
    raise TypeError(f"Unidentified data type {data_type}")


def get_element_type_str(data_type: Any) -> str:
    """As :func:`get_element_type`, as the type's short name (``"f32"``)."""
    return get_element_type(data_type).get_type_name()


def get_dtype(openvino_type: Type) -> np.dtype:
    """The NumPy dtype of an element type."""
    return np.dtype(get_numpy_ctype(openvino_type))


def get_numpy_ctype(openvino_type: Type) -> type:
    """The NumPy scalar type of an element type."""
    for ov_type, np_type in openvino_to_numpy_types_map:
        if ov_type == openvino_type:
            return np_type
    raise TypeError(f"Unidentified data type {openvino_type}")


def get_ndarray(data: Any) -> np.ndarray:
    """``data`` as an ndarray (arrays are returned as they are)."""
    return data if isinstance(data, np.ndarray) else np.array(data)


def get_shape(data: Any) -> Any:
    """The shape of an array, ``[len]`` of a list, ``[]`` of a scalar."""
    if isinstance(data, np.ndarray):
        return data.shape
    if isinstance(data, list):
        return [len(data)]
    return []


def make_constant_node(value: Any, dtype: Any = None, *, name: str | None = None) -> Constant:
    """A Constant holding ``value``, converted to ``dtype`` when given."""
    arr = get_ndarray(value)
    if dtype is None:
        et = get_element_type(arr.dtype)
    else:
        et = dtype if isinstance(dtype, Type) else get_element_type(dtype)
    const = Constant(et, list(arr.shape), arr.reshape(-1))
    if name:
        const.friendly_name = name + "/" + const.friendly_name
    return const


def as_node(input_value: Any, name: str | None = None) -> Node | Output:
    """Nodes and outputs as they are; anything else as a Constant."""
    if isinstance(input_value, (Node, Output)):
        return input_value
    return make_constant_node(input_value, name=name)


def as_nodes(*input_values: Any, name: str | None = None) -> list[Node | Output]:
    return [as_node(v, name=name) for v in input_values]


__all__ = ["as_node", "as_nodes", "get_dtype", "get_element_type", "get_element_type_str", "get_ndarray",
           "get_numpy_ctype", "get_shape", "make_constant_node"]
