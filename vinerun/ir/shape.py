"""Dimensions and shapes: ``Dimension`` (static, dynamic, or a range), ``PartialShape``, ``Shape``.

``str(PartialShape([1, -1, Dimension(2, 5)])) == "[1,?,2..5]"`` as in OpenVINO.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from vinerun.errors import ValidationError
from vinerun.ir.symbol import Symbol

_INF = -1  # "no upper bound"
_MAX_BOUND = (1 << 63) - 1  # what an unbounded dimension contributes to get_max_shape (OpenVINO's int64 max)


class Dimension:
    """One dimension: static (``Dimension(3)``), dynamic (``Dimension()``/``-1``), or a range."""

    __slots__ = ("_min", "_max", "_symbol")

    def __init__(self, min_or_value: int | Dimension | str | None = None, max_value: int | None = None):
        self._symbol: Symbol | None = None
        if isinstance(min_or_value, Dimension):
            self._min, self._max = min_or_value._min, min_or_value._max
            self._symbol = min_or_value._symbol
            return
        if isinstance(min_or_value, str):
            d = Dimension.parse(min_or_value)
            self._min, self._max = d._min, d._max
            return
        if min_or_value is None or (max_value is None and min_or_value == -1):
            self._min, self._max = 0, _INF
        elif max_value is None:
            if min_or_value < 0:
                raise ValidationError(f"A static dimension cannot be negative: {min_or_value}")
            self._min = self._max = int(min_or_value)
        else:
            lo = max(0, int(min_or_value))
            hi = _INF if max_value < 0 else int(max_value)
            if hi != _INF and hi < lo:
                raise ValidationError(f"Dimension range {min_or_value}..{max_value} is empty")
            self._min, self._max = lo, hi

    @staticmethod
    def dynamic() -> Dimension:
        return Dimension()

    @staticmethod
    def parse(text: str) -> Dimension:
        """``"?"``/``"-1"``, ``"3"``, ``"2..5"``, ``"..5"``, ``"2.."``; RuntimeError (as OpenVINO) otherwise."""
        text = text.strip()
        if text in ("?", "-1", ""):
            return Dimension()
        if ".." in text:
            lo, hi = text.split("..", 1)
            return Dimension(_parse_bound(lo, "min", 0), _parse_bound(hi, "max", -1))
        try:
            return Dimension(int(text))
        except ValueError:
            raise ValidationError(f'Cannot parse dimension: "{text}"') from None

    @property
    def is_static(self) -> bool:
        return self._min == self._max

    @property
    def is_dynamic(self) -> bool:
        return not self.is_static

    def get_length(self) -> int:
        if not self.is_static:
            raise ValidationError(f"Cannot get the length of dynamic dimension {self}")
        return self._min

    def get_min_length(self) -> int:
        return self._min

    def get_max_length(self) -> int:
        return self._max

    min_length = property(get_min_length)
    max_length = property(get_max_length)

    # --- symbols -------------------------------------------------------------------------
    def has_symbol(self) -> bool:
        return self._symbol is not None

    def get_symbol(self) -> Symbol | None:
        """This dimension's symbol, or None when it has none (as OpenVINO)."""
        return self._symbol

    def set_symbol(self, symbol: Symbol | None) -> None:
        self._symbol = symbol

    def __len__(self) -> int:
        return self.get_length()

    def __bool__(self) -> bool:
        # without this, truth would go through __len__ and raise for a dynamic dimension
        return self._max != 0

    def compatible(self, other: Dimension | int) -> bool:
        o = Dimension(other)
        hi_ok = self._max == _INF or o._min <= self._max
        lo_ok = o._max == _INF or self._min <= o._max
        return hi_ok and lo_ok

    def merge(self, other: Dimension | int) -> Dimension | None:
        """The intersection of two dimensions, or None if they cannot be equal."""
        o = Dimension(other)
        if not self.compatible(o):
            return None
        lo = max(self._min, o._min)
        his = [h for h in (self._max, o._max) if h != _INF]
        return Dimension(lo, min(his) if his else -1)

    def relaxes(self, other: Dimension) -> bool:
        return self._min <= other._min and (self._max == _INF or (other._max != _INF and other._max <= self._max))

    def refines(self, other: Dimension) -> bool:
        return other.relaxes(self)

    def same_scheme(self, other: Dimension) -> bool:
        return (self.is_dynamic and other.is_dynamic) or self == other

    def to_string(self) -> str:
        if self.is_static:
            return str(self._min)
        if self._min == 0 and self._max == _INF:
            return "?"
        lo = str(self._min) if self._min > 0 else ""
        return f"{lo}..{'' if self._max == _INF else self._max}"

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"<Dimension: {self.to_string()}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int) and not isinstance(other, bool):
            # As OpenVINO: the int is made a Dimension first, so ``Dimension() == -1``.
            if other < -1:
                return False
            other = Dimension(other)
        if isinstance(other, Dimension):
            return (self._min, self._max) == (other._min, other._max)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self._min, self._max))

    def __copy__(self) -> Dimension:
        return Dimension(self)

    def __deepcopy__(self, memo: dict) -> Dimension:
        return Dimension(self)

    def __int__(self) -> int:
        return self.get_length()

    def __index__(self) -> int:
        return self.get_length()

    def _arith(self, other: Dimension | int, op: Any) -> Dimension:
        o = Dimension(other)
        if self.is_static and o.is_static:
            return Dimension(op(self._min, o._min))
        return Dimension()

    def __add__(self, other: Dimension | int) -> Dimension:
        return self._arith(other, lambda a, b: a + b)

    def __mul__(self, other: Dimension | int) -> Dimension:
        return self._arith(other, lambda a, b: a * b)

    __radd__ = __add__
    __rmul__ = __mul__


def _parse_bound(text: str, which: str, default: int) -> int:
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f'Cannot parse {which} bound: "{text}"') from None


DimLike = Dimension | int | str | tuple | list | None


def _as_dim(d: DimLike) -> Dimension:
    """One dimension from an int, a str, a Dimension, or a (lower, upper) pair, with OpenVINO's TypeErrors."""
    if isinstance(d, Dimension):
        return d
    if isinstance(d, (tuple, list)):
        if len(d) != 2:
            raise TypeError("Two elements are expected in tuple(lower, upper) for dynamic dimension, "
                            f"but {len(d)} elements were given.")
        if not all(isinstance(v, (int, np.integer)) for v in d):
            raise TypeError(f"Incorrect pair of types ({type(d[0])}, {type(d[1])}) for dynamic dimension, "
                            "ints are expected.")
        return Dimension(int(d[0]), int(d[1]))
    if d is None or isinstance(d, (int, np.integer, str)):
        return Dimension(d if not isinstance(d, np.integer) else int(d))
    raise TypeError(f"Incorrect type {type(d)} for dimension. Expected types are: int, str, openvino.Dimension, "
                    "list/tuple with lower and upper values for dynamic dimension.")


class PartialShape:
    """A shape whose rank and dimensions may be dynamic. ``PartialShape.dynamic()`` has no rank."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Iterable[DimLike] | str | PartialShape | None = ()):
        if isinstance(dims, PartialShape):
            self._dims = None if dims._dims is None else list(dims._dims)
        elif dims is None:
            self._dims = None
        elif isinstance(dims, str):
            self._dims = PartialShape.parse(dims)._dims
        else:
            self._dims = [_as_dim(d) for d in dims]

    @staticmethod
    def dynamic(rank: int | Dimension | None = None) -> PartialShape:
        if rank is None or (isinstance(rank, Dimension) and rank.is_dynamic):
            return PartialShape(None)
        return PartialShape([Dimension() for _ in range(int(rank))])

    @staticmethod
    def parse(text: str) -> PartialShape:
        text = text.strip()
        if text in ("...", "[...]", "?"):
            return PartialShape(None)
        body = text.strip("[]() ")
        if not body:
            return PartialShape([])
        parts = body.replace(" ", "").split(",")
        if any(not p for p in parts):
            raise ValidationError(f'Cannot get vector of dimensions! "{text}" is incorrect')
        return PartialShape([Dimension.parse(p) for p in parts])

    @property
    def rank(self) -> Dimension:
        return Dimension() if self._dims is None else Dimension(len(self._dims))

    @property
    def is_static(self) -> bool:
        return self._dims is not None and all(d.is_static for d in self._dims)

    @property
    def is_dynamic(self) -> bool:
        return not self.is_static

    @property
    def dims(self) -> list[Dimension] | None:
        return self._dims

    def get_dimension(self, i: int) -> Dimension:
        return self[i]

    def to_shape(self) -> Shape:
        if not self.is_static:
            raise ValidationError(f"Cannot convert dynamic shape {self} to a static Shape")
        return Shape([d.get_length() for d in self._dims])

    get_shape = to_shape

    def get_min_shape(self) -> Shape:
        return Shape([d.get_min_length() for d in self._dims or []])

    def get_max_shape(self) -> Shape:
        """Upper bounds; an unbounded dimension gives OpenVINO's int64 maximum."""
        return Shape([_MAX_BOUND if d._max == _INF else d._max for d in self._dims or []])

    def compatible(self, other: PartialShape | Iterable) -> bool:
        o = other if isinstance(other, PartialShape) else PartialShape(other)
        if self._dims is None or o._dims is None:
            return True
        if len(self._dims) != len(o._dims):
            return False
        return all(a.compatible(b) for a, b in zip(self._dims, o._dims, strict=True))

    def merge(self, other: PartialShape) -> PartialShape | None:
        if self._dims is None:
            return PartialShape(other)
        if other._dims is None:
            return PartialShape(self)
        if len(self._dims) != len(other._dims):
            return None
        out = [a.merge(b) for a, b in zip(self._dims, other._dims, strict=True)]
        return None if any(d is None for d in out) else PartialShape(out)

    def relaxes(self, other: PartialShape) -> bool:
        if self._dims is None:
            return True
        if other._dims is None or len(other._dims) != len(self._dims):
            return False
        return all(a.relaxes(b) for a, b in zip(self._dims, other._dims, strict=True))

    def refines(self, other: PartialShape) -> bool:
        return other.relaxes(self)

    def same_scheme(self, other: PartialShape) -> bool:
        if self._dims is None or other._dims is None:
            return self._dims is None and other._dims is None
        if len(self._dims) != len(other._dims):
            return False
        return all(a.same_scheme(b) for a, b in zip(self._dims, other._dims, strict=True))

    @property
    def all_non_negative(self) -> bool:
        return True  # a Dimension is never negative here

    def to_string(self) -> str:
        if self._dims is None:
            return "[...]"
        return "[" + ",".join(d.to_string() for d in self._dims) + "]"

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"<PartialShape: {self.to_string()}>"

    def __len__(self) -> int:
        if self._dims is None:
            raise ValidationError("A shape of dynamic rank has no length")
        return len(self._dims)

    def __iter__(self) -> Iterator[Dimension]:
        if self._dims is None:
            raise ValidationError("Cannot iterate over a shape of dynamic rank")
        return iter(self._dims)

    def __getitem__(self, i: int | slice) -> Any:
        if self._dims is None:
            raise ValidationError("Cannot index a shape of dynamic rank")
        if isinstance(i, slice):
            return PartialShape(self._dims[i])
        return self._dims[i]

    def __setitem__(self, i: int, value: DimLike) -> None:
        if self._dims is None:
            raise ValidationError("Cannot index a shape of dynamic rank")
        self._dims[i] = _as_dim(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple)) and not isinstance(other, Shape):
            if self.is_dynamic:  # OpenVINO compares only static shapes with Python sequences
                raise TypeError(f"Cannot compare dynamic shape with {type(other)}")
            other = PartialShape(other)
        elif isinstance(other, Shape):
            other = PartialShape(other)
        if not isinstance(other, PartialShape):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(None if self._dims is None else tuple(self._dims))

    def __copy__(self) -> PartialShape:
        return PartialShape(self)

    def __deepcopy__(self, memo: dict) -> PartialShape:
        return PartialShape(None if self._dims is None else [Dimension(d) for d in self._dims])


class Shape(list):
    """A static shape: a list of non-negative ints (``Shape([1, 3, 224, 224])``)."""

    def __init__(self, dims: Iterable[int] = ()):
        super().__init__(int(d) for d in dims)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PartialShape):
            return other == self
        if isinstance(other, (list, tuple)):
            return list.__eq__(self, list(other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]  (mutable, as a list)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return Shape(list.__getitem__(self, i))
        return list.__getitem__(self, i)

    def __copy__(self) -> Shape:
        return Shape(self)

    def __deepcopy__(self, memo: dict) -> Shape:
        return Shape(self)

    def to_string(self) -> str:
        return "[" + ",".join(str(d) for d in self) + "]"

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"<Shape: {self.to_string()}>"


def as_partial_shape(value: Any) -> PartialShape:
    """Coerce a PartialShape, Shape, list/tuple of dims or a string like ``"[1,3,?,?]"``."""
    if isinstance(value, PartialShape):
        return value
    return PartialShape(value)
