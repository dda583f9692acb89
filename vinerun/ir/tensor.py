"""``Tensor``: host memory with an element type and a shape, backed by a NumPy array."""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.ir.shape import PartialShape, Shape
from vinerun.ir.types import Type


class Tensor:
    """A host tensor.

    >>> t = Tensor(np.zeros((2, 3), np.float32))         # copies unless shared_memory=True
    >>> t = Tensor(Type.f32, [2, 3])                      # allocated, zero-filled
    >>> t.data.shape, t.element_type.get_type_name()
    ((2, 3), 'f32')
    """

    __slots__ = ("_data", "_type")

    def __init__(self, array: Any, shape: Any = None, shared_memory: bool = False):
        if isinstance(array, Tensor):
            self._data, self._type = array._data, array._type
            return
        if isinstance(array, (Type, str)) and shape is not None:
            et = Type(array)
            dims = PartialShape(shape).to_shape() if not isinstance(shape, (list, tuple)) else list(shape)
            self._type = et
            self._data = np.zeros(dims, dtype=et.to_dtype()) if et != Type.string else np.full(dims, "", object)
            return
        if isinstance(array, (np.dtype, type)) and shape is not None:
            self.__init__(Type(array), shape)
            return
        arr = np.asarray(array)
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
        elif not shared_memory:
            arr = np.array(arr, copy=True)
        self._data = arr
        self._type = Type(arr.dtype)

    @classmethod
    def wrap(cls, array: np.ndarray, element_type: Type | None = None) -> Tensor:
        """Wrap an array without copying (internal fast path)."""
        t = object.__new__(cls)
        t._data = array
        t._type = element_type if element_type is not None else Type(array.dtype)
        return t

    @property
    def data(self) -> np.ndarray:
        return self._data

    def get_element_type(self) -> Type:
        return self._type

    element_type = property(get_element_type)

    def get_shape(self) -> Shape:
        return Shape(self._data.shape)

    def set_shape(self, shape: Any) -> None:
        dims = tuple(int(d) for d in shape)
        if dims != self._data.shape:
            if self._data.size == int(np.prod(dims)):
                self._data = self._data.reshape(dims)
            else:
                self._data = np.zeros(dims, dtype=self._data.dtype)

    shape = property(get_shape, set_shape)

    def get_size(self) -> int:
        return int(self._data.size)

    size = property(get_size)

    def get_byte_size(self) -> int:
        return int(self._data.nbytes)

    byte_size = property(get_byte_size)

    def get_strides(self) -> list[int]:
        return list(self._data.strides)

    strides = property(get_strides)

    def is_continuous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    @property
    def bytes_data(self) -> bytes:
        return self._data.tobytes()

    @property
    def str_data(self) -> np.ndarray:
        if self._type != Type.string:
            raise TypeError(f"str_data needs a string tensor, this one is {self._type.get_type_name()}")
        return self._data

    def copy_to(self, other: Tensor) -> None:
        other.set_shape(self._data.shape)
        np.copyto(other._data, self._data, casting="unsafe")

    def copy_from(self, source: Tensor | np.ndarray) -> None:
        src = source.data if isinstance(source, Tensor) else np.asarray(source)
        self.set_shape(src.shape)
        np.copyto(self._data, src, casting="unsafe")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"<Tensor: shape[{','.join(map(str, self._data.shape))}] type: {self._type.get_type_name()}>"
