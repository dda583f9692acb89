"""``Tensor``: host memory with an element type and a shape, backed by a NumPy array (OpenVINO's ``ov.Tensor``).

Memory, as in OpenVINO:
- ``Tensor(array, shared_memory=True)`` views the (C-contiguous) array: writes through either show in both, and the
  shape can change only within the array's size. Otherwise the array is copied into memory the tensor owns, which
  ``set_shape`` reallocates when it grows.
- ``Tensor(array, shape, type)`` views the array's bytes as ``type`` elements of ``shape``;
  ``Tensor(port, array)`` does the same with the port's shape and type; ``Tensor(tensor, begin, end)`` is a region
  of another tensor (ROI), sharing its memory.
- Sub-byte types (u1, u2, u3, u4, u6, i4, nf4, f4e2m1) hold packed bytes: ``.data`` is that flat byte buffer.
- String tensors hold Python ``str`` / ``bytes`` items; ``.bytes_data`` / ``.str_data`` read them as ``|S`` / ``<U``
  arrays (copies) and fill them when assigned; ``.data`` warns and gives ``bytes_data``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from vinerun.ir import packing
from vinerun.ir.coordinates import Strides
from vinerun.ir.shape import PartialShape, Shape
from vinerun.ir.types import Type, storage_dtype

_SHARED_NA = "SHARED MEMORY MODE FOR THIS TENSOR IS NOT APPLICABLE!"
_STRING_DATA_WARNING = ("Data of string type will be copied! Please use dedicated properties `str_data` and "
                        "`bytes_data` to avoid confusion while accessing Tensor's contents.")
#: what OpenVINO counts for one string element (sizeof(std::string)): byte_size and strides of string tensors
_STRING_ELEMENT_BYTES = 32
_FIRST_ARG = ("array", "list", "type", "port", "other", "image")
#: types whose ``.data`` openvino shows as raw bits of another dtype (vinerun holds their values, ml_dtypes)
_RAW_VIEWS = {"bf16": np.dtype(np.float16), **{name: np.dtype(np.uint8) for name in (
    "f8e4m3", "f8e5m2", "f8e8m0", "f8e4m3fnuz", "f8e5m2fnuz")}}


def _dims(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, PartialShape):
        shape = shape.to_shape()
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise RuntimeError(f"A tensor's shape must be static and non-negative, got {list(dims)}")
    return dims


def _count(dims: tuple[int, ...]) -> int:
    return int(np.prod(dims, dtype=np.int64))


def _shape_text(dims: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, dims)) + "]"


def _is_port(value: Any) -> bool:
    return not isinstance(value, (Tensor, Type, np.ndarray)) and hasattr(value, "get_partial_shape") \
        and hasattr(value, "get_element_type") and hasattr(value, "get_node")


def _is_pil_image(value: Any) -> bool:
    return any(c.__module__.startswith("PIL.") and c.__name__ == "Image" for c in type(value).__mro__)


def _as_element_type(value: Any) -> Type:
    """The element type of the ``type`` argument: a Type, a NumPy dtype / scalar type, a Python type, or a
    string (as a NumPy dtype first, like openvino: "float32", "|S"; then an element type name: "f32")."""
    if isinstance(value, str):
        try:
            return Type(np.dtype(value))
        except TypeError:
            return Type(value)
    return Type(value)


def _string_items(arr: np.ndarray) -> np.ndarray:
    """A ``U`` / ``S`` array (or an object array of str / bytes) as an object array of str / bytes items."""
    if arr.dtype.kind in "US":
        # item access drops trailing NULs as NumPy does, and as openvino stores them
        return np.array(arr.tolist(), dtype=object).reshape(arr.shape) if arr.size else np.empty(arr.shape, object)
    bad = next((v for v in arr.reshape(-1) if not isinstance(v, (str, bytes))), None)
    if bad is not None:
        raise RuntimeError(f"Unsupported data type: object (item {bad!r} is neither str nor bytes)")
    return np.array(arr, dtype=object, copy=True)


def _strings_array(items: np.ndarray, as_bytes: bool) -> np.ndarray:
    """Object array of str / bytes -> ``|S`` (UTF-8) or ``<U`` (invalid UTF-8 replaced) array, sized to fit."""
    flat = items.reshape(-1)
    if as_bytes:
        vals = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in flat]
        kind = "S"
    else:
        vals = [v.decode("utf-8", errors="replace") if isinstance(v, (bytes, bytearray)) else str(v) for v in flat]
        kind = "U"
    width = max([len(v) for v in vals] + [1])
    return np.array(vals, dtype=f"{kind}{width}").reshape(items.shape)


class Tensor:
    """A host tensor.

    >>> t = Tensor(np.zeros((2, 3), np.float32))         # copies unless shared_memory=True
    >>> t = Tensor(Type.f32, [2, 3])                      # allocated, zero-filled
    >>> t.data.shape, t.element_type.get_type_name()
    ((2, 3), 'f32')
    """

    # _root: the memory (its capacity); _view: the current shape's view of it, None when that is _root itself;
    # _shape: the logical shape (packed types: not the buffer's); _owned: memory the tensor may reallocate
    __slots__ = ("_root", "_view", "_type", "_shape", "_owned")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not args:
            key = next((k for k in _FIRST_ARG if k in kwargs), None)
            if key is None:
                raise TypeError("Tensor() takes an array, a list, a type and a shape, a port, a tensor and a region, "
                                "or a PIL image")
            args = (kwargs.pop(key),)
        first, rest = args[0], list(args[1:])

        def arg(name: str, default: Any = None) -> Any:
            if rest:
                return rest.pop(0)
            return kwargs.pop(name, default)

        if isinstance(first, Tensor):
            if rest or "begin" in kwargs:
                self._init_roi(first, arg("begin"), arg("end"))
            else:  # vinerun: another view of the same memory
                self._set(first._root, first._type, first._shape, first._owned, first._view)
        elif _is_port(first):
            self._init_port(first, arg("array"))
        elif isinstance(first, (Type, np.dtype, type)) or (isinstance(first, str) and (rest or "shape" in kwargs)):
            self._init_alloc(_as_element_type(first), _dims(arg("shape")))
        else:
            if _is_pil_image(first):
                first = np.asarray(first)
            elif isinstance(first, list):
                first = np.array(first)
            elif not isinstance(first, np.ndarray):
                raise TypeError("Input argument must be a PIL.Image.Image/numpy.array/list[int, float, str] object")
            second = arg("shape") if (rest and not isinstance(rest[0], bool)) or "shape" in kwargs else None
            if second is not None:
                self._init_viewed(first, _dims(second), arg("type"))
            else:
                self._init_array(first, bool(arg("shared_memory", False)))
        if kwargs:
            raise TypeError(f"Tensor() got unexpected arguments: {', '.join(kwargs)}")

    # --- construction ------------------------------------------------------------------------------------------
    def _set(self, root: np.ndarray, et: Type, shape: tuple[int, ...], owned: bool,
             view: np.ndarray | None = None) -> None:
        self._root, self._type, self._shape, self._owned, self._view = root, et, tuple(shape), owned, view

    def _init_alloc(self, et: Type, dims: tuple[int, ...]) -> None:
        if et.is_dynamic():
            raise RuntimeError("Cannot allocate a tensor of the dynamic element type")
        self._set(self._allocate(et, dims), et, dims, True)

    @staticmethod
    def _allocate(et: Type, dims: tuple[int, ...]) -> np.ndarray:
        if et == Type.string:
            return np.full(dims, "", dtype=object)
        if packing.is_packed(et):
            return np.zeros(packing.packed_nbytes(et, _count(dims)), packing.packed_dtype(et))
        return np.zeros(dims, storage_dtype(et))

    def _init_array(self, arr: np.ndarray, shared: bool) -> None:
        if arr.dtype.kind in "USO":
            if shared:
                raise RuntimeError(f"{_SHARED_NA} String types can be only copied.")
            self._set(_string_items(arr), Type.string, arr.shape, True)
            return
        et = Type(arr.dtype)
        if shared:
            if not arr.flags.c_contiguous:
                raise RuntimeError(f"{_SHARED_NA} Passed numpy array must be C contiguous.")
            if not arr.dtype.isnative:
                raise RuntimeError(f"{_SHARED_NA} Passed numpy array must be in the machine's byte order.")
            self._set(arr, et, arr.shape, False)
        else:
            self._set(np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C", copy=True), et, arr.shape, True)

    def _init_viewed(self, arr: np.ndarray, dims: tuple[int, ...], et: Any) -> None:
        """``Tensor(array, shape, type)``: the array's memory seen as ``type`` elements of ``shape``."""
        if arr.dtype.kind in "USO":
            raise RuntimeError(f"{_SHARED_NA} String types can be only copied.")
        if not arr.flags.c_contiguous:
            raise RuntimeError(f"{_SHARED_NA} Passed numpy array must be C contiguous.")
        et = Type(arr.dtype) if et is None or Type(et).is_dynamic() else Type(et)
        self._set(self._view_bytes(arr, et, dims), et, dims, False)

    @staticmethod
    def _view_bytes(arr: np.ndarray, et: Type, dims: tuple[int, ...]) -> np.ndarray:
        n = _count(dims)
        if packing.is_packed(et):
            need, dtype, shape = packing.packed_nbytes(et, n), packing.packed_dtype(et), (-1,)
        else:
            dtype = storage_dtype(et)
            need, shape = n * dtype.itemsize, dims
        if need > arr.nbytes:
            raise RuntimeError(f"The array holds {arr.nbytes} bytes, but a {et.get_type_name()} tensor of shape "
                               f"{_shape_text(dims)} needs {need}")
        raw = arr.reshape(-1).view(np.uint8)[:need]
        return raw.view(dtype).reshape(shape)

    def _init_port(self, port: Any, arr: Any) -> None:
        et = port.get_element_type()
        ps = port.get_partial_shape()
        dims = _dims(ps.to_shape()) if ps.is_static else (0,)
        if arr is None:
            self._init_alloc(et, dims)
            return
        arr = np.asarray(arr)
        if et == Type.string or arr.dtype.kind in "USO":
            raise RuntimeError(f"{_SHARED_NA} String types can be only copied.")
        if not arr.flags.c_contiguous:
            raise RuntimeError(f"{_SHARED_NA} Passed numpy array must be C contiguous.")
        n = _count(dims)
        if n > arr.size:
            raise RuntimeError("Shape of the port exceeds shape of the array.")
        if n < arr.size and ps.is_static:
            warnings.warn("Shape of the port is smaller than shape of the array. Passed data will be cropped.",
                          RuntimeWarning, stacklevel=3)
        if Type(arr.dtype) != et:
            warnings.warn("Type of the array and the port are different. Data is going to be casted.",
                          RuntimeWarning, stacklevel=3)
        elif arr.shape == dims:
            self._set(arr, et, dims, False)  # the array itself: one more reference to it, no view
            return
        self._set(self._view_bytes(arr, et, dims), et, dims, False)

    def _init_roi(self, other: Tensor, begin: Any, end: Any) -> None:
        et = other._type
        if packing.is_packed(et):
            raise RuntimeError("Could not create a region of interest: not supported for types with bitwidths less "
                               f"then 8 bit. Tensor type: {et.get_type_name()}")
        b, e, dims = [int(x) for x in begin], [int(x) for x in end], other._shape
        if not len(b) == len(e) == len(dims):
            raise RuntimeError(f"Check 'tensor_shape.size() == begin.size()' failed: the region {b}..{e} does not "
                               f"have the rank of the tensor's shape {_shape_text(dims)}")
        if any(x < 0 or y > d or x > y for x, y, d in zip(b, e, dims, strict=True)):
            raise RuntimeError(f"Check 'roi_begin <= roi_end <= shape' failed: the region {b}..{e} is not inside "
                               f"the tensor's shape {_shape_text(dims)}")
        region = other._array()[tuple(slice(x, y) for x, y in zip(b, e, strict=True))]
        self._set(region, et, region.shape, False)

    @classmethod
    def wrap(cls, array: np.ndarray, element_type: Type | None = None) -> Tensor:
        """A tensor over an array vinerun computed (internal): no copy, except sub-byte types, which get packed."""
        t = object.__new__(cls)
        et = element_type if element_type is not None else Type(array.dtype)
        if et == Type.string and array.dtype.kind != "O":
            array = _string_items(array)
        if packing.is_packed(et):  # vinerun computes with one element per item
            t._set(packing.pack(array, et), et, array.shape, True)
        else:
            t._set(array, et, array.shape, True)
        return t

    # --- memory --------------------------------------------------------------------------------------------
    def _array(self) -> np.ndarray:
        """The current memory: the shaped array (strings: object items; packed types: the bytes)."""
        return self._root if self._view is None else self._view

    def _values(self) -> np.ndarray:
        """The elements as vinerun computes with them (internal): the memory itself for ordinary types, an object
        array of str / bytes for strings, one element per item (``storage_dtype``) for sub-byte types (a copy)."""
        if packing.is_packed(self._type):
            return packing.unpack(self._array(), self._type, self._shape)
        return self._array()

    @property
    def data(self) -> np.ndarray:
        """The tensor's memory as an array (shared: writes change the tensor). Strings: a copy, see ``bytes_data``.

        As openvino, bf16 and f8 tensors show their raw bits (float16 / uint8 views: ``data[:] = x`` writes
        ``x``'s bits), and sub-byte types their packed bytes.
        """
        if self._type == Type.string:
            warnings.warn(_STRING_DATA_WARNING, RuntimeWarning, stacklevel=2)
            return self.bytes_data
        raw = _RAW_VIEWS.get(self._type.get_type_name())
        # always a view of the tensor's memory, never the array itself (OWNDATA is False, as in openvino)
        return self._array()[...] if raw is None else self._array().view(raw)

    def get_element_type(self) -> Type:
        return self._type

    element_type = property(get_element_type)

    def get_shape(self) -> Shape:
        return Shape(list(self._shape))

    def set_shape(self, shape: Any) -> None:
        """Change the shape: within the memory's capacity it stays the same memory; beyond it, memory the tensor
        owns is reallocated (contents lost), and memory it shares raises."""
        dims = _dims(shape)
        if dims == self._shape:
            return
        root, n = self._root, _count(dims)
        if packing.is_packed(self._type):
            need = packing.packed_nbytes(self._type, n)
            if need <= root.size:
                self._set(root, self._type, dims, self._owned, None if need == root.size else root[:need])
                return
        elif root.flags.c_contiguous:
            if n <= root.size:
                view = root.reshape(-1)[:n].reshape(dims)
                self._set(root, self._type, dims, self._owned, None if dims == root.shape else view)
                return
        elif len(dims) == root.ndim and all(d <= r for d, r in zip(dims, root.shape, strict=True)):
            # a region of another tensor: keep its strides, take the leading corner
            self._set(root, self._type, dims, self._owned, root[tuple(slice(0, d) for d in dims)])
            return
        if not self._owned:
            raise RuntimeError(f"Check 'shape_size(new_shape) <= capacity' failed: could not set new shape "
                               f"{_shape_text(dims)}: the tensor views memory it does not own, which holds "
                               f"{_shape_text(self._shape)}")
        self._set(self._allocate(self._type, dims), self._type, dims, True)

    shape = property(get_shape, set_shape)

    def get_size(self) -> int:
        return _count(self._shape)

    size = property(get_size)

    def get_byte_size(self) -> int:
        if self._type == Type.string:
            return self.get_size() * _STRING_ELEMENT_BYTES
        if packing.is_packed(self._type):
            return packing.packed_nbytes(self._type, self.get_size())
        return self.get_size() * self._array().dtype.itemsize

    byte_size = property(get_byte_size)

    def get_strides(self) -> Strides:
        """Byte strides of each dimension (strings count 32 bytes an element, as openvino)."""
        if packing.is_packed(self._type):
            raise RuntimeError("Could not get strides for types with bitwidths less then 8 bit. "
                               f"Tensor type: {self._type.get_type_name()}")
        if self._type == Type.string:
            return Strides([int(np.prod(self._shape[i + 1:], dtype=np.int64)) * _STRING_ELEMENT_BYTES
                            for i in range(len(self._shape))])
        return Strides(self._array().strides)

    strides = property(get_strides)

    def is_continuous(self) -> bool:
        return bool(self._array().flags.c_contiguous)

    # --- strings -------------------------------------------------------------------------------------------
    def _check_string(self) -> None:
        if self._type != Type.string:
            raise RuntimeError(f"Tensor's type must be a string! This tensor is {self._type.get_type_name()}")

    @property
    def bytes_data(self) -> np.ndarray:
        """The strings as a ``|S`` array of UTF-8 bytes (a copy); assign an array or list of str / bytes with as
        many elements as the tensor to fill it."""
        self._check_string()
        return _strings_array(self._array(), as_bytes=True)

    @bytes_data.setter
    def bytes_data(self, value: Any) -> None:
        self._fill_strings(value)

    @property
    def str_data(self) -> np.ndarray:
        """The strings as a ``<U`` array (a copy; invalid UTF-8 replaced by U+FFFD); assignable as ``bytes_data``."""
        self._check_string()
        return _strings_array(self._array(), as_bytes=False)

    @str_data.setter
    def str_data(self, value: Any) -> None:
        self._fill_strings(value)

    def _fill_strings(self, value: Any) -> None:
        self._check_string()
        arr = value if isinstance(value, np.ndarray) else np.array(value)
        if arr.dtype.kind not in "US":
            raise RuntimeError("Unknown string kind passed to fill the Tensor's data! Pass str or bytes items, "
                               f"not {arr.dtype}")
        if arr.size != self.get_size():
            raise RuntimeError("Passed array must have the same size (number of elements) as the Tensor! "
                               f"Got {arr.size}, the tensor holds {self.get_size()}")
        dst = self._array()
        np.copyto(dst, _string_items(arr).reshape(dst.shape))

    # --- copies --------------------------------------------------------------------------------------------
    def copy_to(self, other: Tensor) -> None:
        """Copy this tensor's elements into ``other`` (same element type; its shape becomes this one's)."""
        if not isinstance(other, Tensor):
            raise TypeError(f"copy_to takes a Tensor, not {type(other).__name__}")
        other._copy_from_tensor(self)

    def copy_from(self, source: Tensor | np.ndarray | list) -> None:
        """Copy ``source``'s elements into this tensor (same element type; this shape becomes the source's)."""
        if isinstance(source, Tensor):
            self._copy_from_tensor(source)
            return
        arr = source if isinstance(source, np.ndarray) else np.array(source)
        if self._type == Type.string and arr.dtype.kind in "USO":
            self.set_shape(arr.shape)
            np.copyto(self._array(), _string_items(arr))
            return
        self._copy_from_tensor(Tensor(arr) if arr.dtype.kind in "USO" else Tensor.wrap(arr))

    def _copy_from_tensor(self, src: Tensor) -> None:
        if src._type != self._type:
            raise RuntimeError(f"Tensor element types are not equal. (src: {src._type.get_type_name()} != "
                               f"dst: {self._type.get_type_name()})")
        if src is self:
            return
        self.set_shape(src._shape)
        np.copyto(self._array(), src._array())

    def __copy__(self) -> Tensor:
        t = object.__new__(Tensor)
        t._set(self._root, self._type, self._shape, self._owned, self._view)
        return t

    def __deepcopy__(self, memo: dict) -> Tensor:
        t = object.__new__(Tensor)
        t._set(np.array(self._array(), order="C", copy=True), self._type, self._shape, True)
        return t

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self._values()
        return arr if dtype is None else arr.astype(dtype)

    def __repr__(self) -> str:
        return f"<Tensor: shape{_shape_text(self._shape)} type: {self._type.get_type_name()}>"


def tensor_values(value: Tensor) -> np.ndarray:
    """A tensor's elements as vinerun computes with them (see ``Tensor._values``): for the runtime and graph code
    that takes user tensors (inputs, constants, variable states)."""
    return value._values()


def strings_as(value: np.ndarray, decode: bool) -> np.ndarray:
    """String elements (an object array of str / bytes, or a ``U`` / ``S`` array) as ``<U`` (``decode``) or ``|S``
    (UTF-8) array, as openvino returns string outputs for ``decode_strings`` True / False."""
    items = value if value.dtype.kind == "O" else _string_items(value)
    return _strings_array(items, as_bytes=not decode)


def tensor_memory(value: Tensor) -> np.ndarray:
    """A tensor's memory as an array, without ``.data``'s copy and warning for strings (internal): the object array
    of str / bytes for strings, the packed bytes for sub-byte types, the array itself otherwise."""
    return value._array()


def set_tensor_values(value: Tensor, values: Any) -> None:
    """Write elements as vinerun computes with them (see ``tensor_values``) into a tensor, taking their shape
    (internal: ``evaluate(outputs, inputs)`` and the like)."""
    arr = np.asarray(values)
    value.set_shape(arr.shape)
    if value._type == Type.string:
        np.copyto(value._array(), _string_items(arr) if arr.dtype.kind != "O" else arr)
    elif packing.is_packed(value._type):
        np.copyto(value._array(), packing.pack(arr, value._type))
    else:
        dst = value._array()
        dst[...] = arr.astype(dst.dtype, copy=False)
