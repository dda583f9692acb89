"""Tensor datatypes: KServe strings <-> NumPy dtypes <-> vinerun element types, and TensorFlow's DataType.

>>> to_numpy("FP32")
dtype('float32')
>>> from_numpy(np.dtype(np.int64))
'INT64'
>>> tf_to_numpy(1), numpy_to_tf(np.dtype(np.uint8))
(dtype('float32'), 4)
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from vinerun.serving.errors import InvalidPrecision

#: KServe v2 datatype -> NumPy dtype (BYTES: object arrays of ``bytes``)
KSERVE_TO_NUMPY: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_), "UINT8": np.dtype(np.uint8), "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32), "UINT64": np.dtype(np.uint64), "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16), "INT32": np.dtype(np.int32), "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16), "FP32": np.dtype(np.float32), "FP64": np.dtype(np.float64),
    "BF16": np.dtype(ml_dtypes.bfloat16), "BYTES": np.dtype(object),
}
NUMPY_TO_KSERVE: dict[np.dtype, str] = {v: k for k, v in KSERVE_TO_NUMPY.items()}

#: vinerun element type name (``Type.get_type_name()``) -> KServe datatype
ELEMENT_TO_KSERVE: dict[str, str] = {
    "boolean": "BOOL", "u8": "UINT8", "u16": "UINT16", "u32": "UINT32", "u64": "UINT64", "i8": "INT8",
    "i16": "INT16", "i32": "INT32", "i64": "INT64", "f16": "FP16", "f32": "FP32", "f64": "FP64", "bf16": "BF16",
    "string": "BYTES",
}

#: TensorFlow ``DataType`` enum number -> (name, NumPy dtype)
TF_TYPES: dict[int, tuple[str, np.dtype]] = {
    1: ("DT_FLOAT", np.dtype(np.float32)), 2: ("DT_DOUBLE", np.dtype(np.float64)),
    3: ("DT_INT32", np.dtype(np.int32)), 4: ("DT_UINT8", np.dtype(np.uint8)), 5: ("DT_INT16", np.dtype(np.int16)),
    6: ("DT_INT8", np.dtype(np.int8)), 7: ("DT_STRING", np.dtype(object)), 9: ("DT_INT64", np.dtype(np.int64)),
    10: ("DT_BOOL", np.dtype(np.bool_)), 17: ("DT_UINT16", np.dtype(np.uint16)),
    19: ("DT_HALF", np.dtype(np.float16)), 22: ("DT_UINT32", np.dtype(np.uint32)),
    23: ("DT_UINT64", np.dtype(np.uint64)),
}
TF_NAME_TO_NUMBER: dict[str, int] = {name: num for num, (name, _) in TF_TYPES.items()}
NUMPY_TO_TF: dict[np.dtype, int] = {dt: num for num, (_, dt) in TF_TYPES.items()}


def to_numpy(datatype: str) -> np.dtype:
    """The NumPy dtype of a KServe datatype string; an unknown string is an ``InvalidPrecision``."""
    try:
        return KSERVE_TO_NUMPY[datatype]
    except (KeyError, TypeError):
        raise InvalidPrecision(f"unknown datatype {datatype!r}; known: {', '.join(KSERVE_TO_NUMPY)}") from None


def from_numpy(dtype: Any) -> str:
    """The KServe datatype string of a NumPy dtype (strings and bytes arrays are ``BYTES``)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OSU":
        return "BYTES"
    try:
        return NUMPY_TO_KSERVE[dtype]
    except KeyError:
        raise InvalidPrecision(f"NumPy dtype {dtype} has no KServe datatype") from None


def from_element_type(element_type: Any) -> str:
    """The KServe datatype string of a vinerun element type (``Type.f32`` -> ``"FP32"``)."""
    name = element_type.get_type_name() if hasattr(element_type, "get_type_name") else str(element_type)
    return ELEMENT_TO_KSERVE.get(name, name.upper())


def tf_to_numpy(number: int) -> np.dtype:
    """The NumPy dtype of a TensorFlow ``DataType`` number."""
    try:
        return TF_TYPES[number][1]
    except KeyError:
        raise InvalidPrecision(f"unsupported TensorFlow DataType {number}") from None


def numpy_to_tf(dtype: Any) -> int:
    """The TensorFlow ``DataType`` number of a NumPy dtype."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OSU":
        return 7
    try:
        return NUMPY_TO_TF[dtype]
    except KeyError:
        raise InvalidPrecision(f"NumPy dtype {dtype} has no TensorFlow DataType") from None


def tf_name(number: int) -> str:
    """``1`` -> ``"DT_FLOAT"``."""
    return TF_TYPES[number][0] if number in TF_TYPES else f"DT_INVALID({number})"
