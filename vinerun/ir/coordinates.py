"""OpenVINO's small index containers: ``Strides``, ``AxisVector``, ``Coordinate``, ``CoordinateDiff``
(fixed-length, mutable sequences of ints) and ``AxisSet`` (a sorted set of axes)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, SupportsIndex


class _IntVector:
    """A list of ints that can be read, iterated and assigned by index, as OpenVINO's vectors."""

    signed: ClassVar[bool] = False

    def __init__(self, values: Iterable[SupportsIndex] = ()):
        items = values._items if isinstance(values, _IntVector) else [int(v) for v in values]  # type: ignore[arg-type]
        self._items: list[int] = [self._check(v) for v in items]

    def _check(self, value: Any) -> int:
        v = int(value)
        if v < 0 and not self.signed:
            raise TypeError(f"{type(self).__name__} holds non-negative values, got {v}")
        return v

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[int]:
        return iter(self._items)

    def __getitem__(self, i: Any) -> Any:
        return self._items[i]

    def __setitem__(self, i: int, value: SupportsIndex) -> None:
        self._items[i] = self._check(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _IntVector):
            return self._items == other._items
        if isinstance(other, (list, tuple)):
            return self._items == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy as np

        return np.asarray(self._items, dtype=dtype or np.int64)

    def __str__(self) -> str:
        return ", ".join(map(str, self._items))

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: ({str(self)})>"


class Strides(_IntVector):
    """Strides of a window per spatial axis."""


class AxisVector(_IntVector):
    """An ordered list of axes."""


class Coordinate(_IntVector):
    """A position in a tensor."""


class CoordinateDiff(_IntVector):
    """Signed offsets per axis (paddings)."""

    signed = True


class AxisSet:
    """A set of axes; iterates in increasing order."""

    def __init__(self, axes: Iterable[SupportsIndex] = ()):
        self._axes: set[int] = {int(a) for a in axes}  # type: ignore[arg-type]
        if any(a < 0 for a in self._axes):
            raise TypeError("AxisSet holds non-negative axes")

    def __len__(self) -> int:
        return len(self._axes)

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._axes))

    def __contains__(self, axis: object) -> bool:
        return axis in self._axes

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AxisSet):
            return self._axes == other._axes
        if isinstance(other, (set, frozenset)):
            return self._axes == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "<AxisSet {" + ", ".join(map(str, self)) + "}>"


__all__ = ["AxisSet", "AxisVector", "Coordinate", "CoordinateDiff", "Strides"]
