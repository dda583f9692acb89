"""Element types (``Type.f32`` ...) with their NumPy dtypes.

Names and spellings follow OpenVINO: ``Type.f32.get_type_name() == "f32"``,
``repr(Type.f32) == "<Type: 'float32'>"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import ml_dtypes
import numpy as np


@dataclass(frozen=True, eq=False)
class _TypeInfo:
    name: str  # short name: "f32"
    long_name: str  # OpenVINO's C type name, shown by repr: "float32", "int8_t", "char" (boolean)
    bitwidth: int
    dtype: Any  # numpy dtype vinerun computes with (one element per item), or None for dynamic
    is_real: bool
    is_signed: bool
    onnx: int | None  # onnx.TensorProto data type number
    quantized: bool = False  # OpenVINO's is_quantized(): the types low-precision kernels take


_U8 = np.dtype(np.uint8)
_TABLE: list[_TypeInfo] = [
    _TypeInfo("dynamic", "dynamic", 0, None, False, False, None),
    _TypeInfo("boolean", "char", 8, np.dtype(np.bool_), False, True, 9),
    _TypeInfo("bf16", "bfloat16", 16, np.dtype(ml_dtypes.bfloat16), True, True, 16),
    _TypeInfo("f16", "float16", 16, np.dtype(np.float16), True, True, 10),
    _TypeInfo("f32", "float32", 32, np.dtype(np.float32), True, True, 1),
    _TypeInfo("f64", "double64", 64, np.dtype(np.float64), True, True, 11),
    _TypeInfo("f8e4m3", "f8e4m3", 8, np.dtype(ml_dtypes.float8_e4m3fn), True, True, 17, True),
    _TypeInfo("f8e5m2", "f8e5m2", 8, np.dtype(ml_dtypes.float8_e5m2), True, True, 19, True),
    _TypeInfo("f8e4m3fnuz", "f8e4m3fnuz", 8, np.dtype(ml_dtypes.float8_e4m3fnuz), True, True, 18, True),
    _TypeInfo("f8e5m2fnuz", "f8e5m2fnuz", 8, np.dtype(ml_dtypes.float8_e5m2fnuz), True, True, 20, True),
    _TypeInfo("f8e8m0", "f8e8m0", 8, np.dtype(ml_dtypes.float8_e8m0fnu), True, True, 24, True),
    _TypeInfo("f4e2m1", "f4e2m1", 4, np.dtype(ml_dtypes.float4_e2m1fn), True, True, 23, True),
    _TypeInfo("i2", "int2", 2, np.dtype(ml_dtypes.int2), False, True, 26),
    _TypeInfo("i4", "int4_t", 4, np.dtype(ml_dtypes.int4), False, True, 22, True),
    _TypeInfo("i8", "int8_t", 8, np.dtype(np.int8), False, True, 3, True),
    _TypeInfo("i16", "int16_t", 16, np.dtype(np.int16), False, True, 5),
    _TypeInfo("i32", "int32_t", 32, np.dtype(np.int32), False, True, 6, True),
    _TypeInfo("i64", "int64_t", 64, np.dtype(np.int64), False, True, 7),
    _TypeInfo("u1", "uint1_t", 1, _U8, False, False, None),
    _TypeInfo("u2", "uint2_t", 2, np.dtype(ml_dtypes.uint2), False, False, 25),
    _TypeInfo("u3", "uint3_t", 3, _U8, False, False, None),
    _TypeInfo("u4", "uint4_t", 4, np.dtype(ml_dtypes.uint4), False, False, 21),
    _TypeInfo("u6", "uint6_t", 6, _U8, False, False, None),
    _TypeInfo("u8", "uint8_t", 8, _U8, False, False, 2, True),
    _TypeInfo("u16", "uint16_t", 16, np.dtype(np.uint16), False, False, 4),
    _TypeInfo("u32", "uint32_t", 32, np.dtype(np.uint32), False, False, 12),
    _TypeInfo("u64", "uint64_t", 64, np.dtype(np.uint64), False, False, 13),
    # NormalFloat4: 4-bit codes into a fixed table of 16 values; vinerun keeps the codes (u8)
    _TypeInfo("nf4", "nfloat4", 4, _U8, False, False, None, True),
    # a string element is a std::string in OpenVINO (32 bytes); vinerun holds Python str / bytes objects
    _TypeInfo("string", "string", 256, np.dtype(object), False, False, 8),
    _TypeInfo("c64", "complex64", 64, np.dtype(np.complex64), True, True, 14),
    _TypeInfo("c128", "complex128", 128, np.dtype(np.complex128), True, True, 15),
]


class _TypeMeta(type):
    def __getattr__(cls, name: str) -> Type:
        try:
            return cls._by_name[name]
        except KeyError:
            raise AttributeError(f"type object 'Type' has no attribute '{name}'") from None


class Type(metaclass=_TypeMeta):
    """An element type, e.g. ``Type.f32``; ``Type("f32")`` and ``Type(np.float32)`` also work."""

    _by_name: ClassVar[dict[str, Type]] = {}
    _by_dtype: ClassVar[dict[np.dtype, Type]] = {}
    _by_onnx: ClassVar[dict[int, Type]] = {}
    __slots__ = ("_info",)
    _info: _TypeInfo

    def __new__(cls, value: Any = "dynamic") -> Type:
        if isinstance(value, Type):
            return value
        if isinstance(value, str):
            key = value.strip()
            found = cls._by_name.get(key) or cls._by_name.get(_ALIASES.get(key.lower(), ""))
            if found is not None:
                return found
            # then what NumPy reads as a dtype ("|S", "<U5", "bytes_", "str_", "?"), as openvino's Type(str) does
            try:
                dtype = np.dtype(key)
            except TypeError:
                raise TypeError(f"Unknown element type '{value}'. Known: {', '.join(sorted(cls._by_name))}") from None
            return cls._from_dtype(dtype)
        try:
            dtype = np.dtype(value)
        except TypeError:
            raise TypeError(f"Cannot convert {value!r} to an element type") from None
        return cls._from_dtype(dtype)

    @classmethod
    def _from_dtype(cls, dtype: np.dtype) -> Type:
        if dtype.kind in "US":
            return cls._by_name["string"]
        found = cls._by_dtype.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)
        if found is None:
            raise TypeError(f"NumPy dtype {dtype} has no vinerun element type")
        return found

    @classmethod
    def _make(cls, info: _TypeInfo) -> Type:
        obj = object.__new__(cls)
        obj._info = info
        return obj

    @classmethod
    def from_onnx(cls, code: int) -> Type:
        """The element type for an ``onnx.TensorProto.DataType`` number."""
        try:
            return cls._by_onnx[code]
        except KeyError:
            raise TypeError(f"ONNX element type {code} is not supported") from None

    # --- OpenVINO-compatible accessors -------------------------------------------------
    def get_type_name(self) -> str:
        return self._info.name

    type_name = property(get_type_name)

    def to_string(self) -> str:
        return self._info.name

    def get_bitwidth(self) -> int:
        return self._info.bitwidth

    bitwidth = property(get_bitwidth)

    def get_size(self) -> int:
        """Bytes of one element, rounded up (1 for sub-byte types, 0 for dynamic, 32 for string)."""
        return (self._info.bitwidth + 7) // 8

    size = property(get_size)

    def to_dtype(self) -> np.dtype:
        """The NumPy dtype of this element type's values.

        As openvino: ``Type.string`` gives ``dtype('S')`` (``bytes_``). vinerun's own dtypes otherwise:
        ml_dtypes' bfloat16 / float8 / int4 / uint4 ... hold the values themselves (openvino shows their raw
        bits as float16 / uint8), and u1 / u3 / u6 / nf4 give uint8.
        """
        if self._info.dtype is None:
            raise TypeError("Type.dynamic has no NumPy dtype")
        if self._info.name == "string":
            return np.dtype(np.bytes_)
        return self._info.dtype

    @property
    def onnx_code(self) -> int | None:
        return self._info.onnx

    def is_dynamic(self) -> bool:
        return self._info.dtype is None

    def is_static(self) -> bool:
        return not self.is_dynamic()

    def is_real(self) -> bool:
        return self._info.is_real

    def is_integral(self) -> bool:
        """Not real, as in openvino: ``dynamic``, ``boolean`` and ``string`` count as integral."""
        return not self._info.is_real

    def is_integral_number(self) -> bool:
        """Integral and not boolean (openvino counts ``dynamic`` and ``string`` in)."""
        return self.is_integral() and self._info.name != "boolean"

    def is_signed(self) -> bool:
        return self._info.is_signed

    def is_quantized(self) -> bool:
        return self._info.quantized

    real = property(is_real)
    integral = property(is_integral)
    integral_number = property(is_integral_number)
    signed = property(is_signed)
    quantized = property(is_quantized)

    def compatible(self, other: Type) -> bool:
        return self.is_dynamic() or other.is_dynamic() or self is other

    def merge(self, other: Type) -> Type | None:
        if self.is_dynamic():
            return other
        if other.is_dynamic() or other is self:
            return self
        return None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Type(other)
            except TypeError:
                return False
        return self is other

    def __hash__(self) -> int:
        return hash(self._info.name)

    def __repr__(self) -> str:
        return f"<Type: '{self._info.long_name}'>"

    __str__ = __repr__

    def __reduce__(self) -> tuple:
        return (Type, (self._info.name,))


_ALIASES = {
    "float32": "f32", "float": "f32", "float16": "f16", "half": "f16", "float64": "f64", "double": "f64",
    "bfloat16": "bf16", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
    "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "boolean", "int4": "i4", "uint4": "u4",
    "f8e4m3fn": "f8e4m3", "str": "string",
    "fp32": "f32", "fp16": "f16", "fp64": "f64", "undefined": "dynamic",
}

for _info in _TABLE:
    _t = Type._make(_info)
    Type._by_name[_info.name] = _t
    # uint8 is u8's: u1 / u3 / u6 / nf4 hold their values in uint8 too
    if _info.dtype is not None and (_info.dtype != _U8 or _info.name == "u8"):
        Type._by_dtype.setdefault(_info.dtype, _t)
    if _info.onnx is not None:
        Type._by_onnx[_info.onnx] = _t
Type._by_dtype[np.dtype(np.bool_)] = Type._by_name["boolean"]


def as_type(value: Any) -> Type:
    """Coerce a Type, name or dtype into a :class:`Type`."""
    return Type(value)


def storage_dtype(et: Type) -> np.dtype:
    """The dtype of the arrays vinerun computes ``et`` with: ``to_dtype()``, except ``object`` (Python str /
    bytes items) for strings, where ``to_dtype()`` answers ``bytes_`` as openvino does."""
    if et.is_dynamic():
        raise TypeError("Type.dynamic has no NumPy dtype")
    return et._info.dtype
