"""``Layout("NCHW")``: names for the dimensions of a tensor, as in OpenVINO.

A layout names some dimensions by position: from the left (``"NC..."``: index 0, 1), from the right after an
ellipsis (``"...HW"``: index -2, -1), or all of them (``"NCHW"``, ``"[N,C,H,W]"``); ``?`` is an unnamed
dimension. ``Layout()`` is the empty layout ``[...]``. Names are upper-cased and the aliases BATCH/B,
CHANNELS/CHANNEL, HEIGHT, WIDTH, DEPTH map to N, C, H, W, D. The module also holds the layout arithmetic
the pre-processing needs (``find_permutation``, ``apply_permutation``, ``find_squeeze``, ``find_unsqueeze``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vinerun.errors import ValidationError

_SCALAR = "**SCALAR**"
_ELLIPSIS = "..."
_ALIASES = {"N": "N", "BATCH": "N", "B": "N", "CHANNELS": "C", "CHANNEL": "C", "HEIGHT": "H", "WIDTH": "W",
            "DEPTH": "D"}


def _internal(name: str) -> str:
    upper = name.upper()
    return _ALIASES.get(upper, upper)


def _validate(name: str) -> None:
    if not name:
        raise ValidationError("Layout dimension name can't be empty")
    for c in name:
        if not (c.isascii() and c.isalnum()) and c != "_":
            raise ValidationError(f"Layout name is invalid ({name}). Only english letters, digits and _ is allowed")
    if not any(c.isascii() and c.isalnum() for c in name):
        raise ValidationError(f"Layout name is invalid ({name}). Name shall have alphanumeric characters")


class Layout:
    """A tensor layout such as ``"NCHW"``, ``"NC..."``, ``"N?C"`` or ``"[N,C,H,W]"``."""

    __slots__ = ("_dynamic", "_index_map", "_left", "_names", "_right", "_scalar")

    def __init__(self, layout_str: str = ""):
        self._names: dict[str, int] = {}
        self._index_map: dict[int, str] = {}
        self._dynamic, self._left, self._right, self._scalar = True, 0, 0, False
        if not isinstance(layout_str, str):
            raise TypeError(f"Layout takes a string, got {type(layout_str).__name__}")
        if layout_str == "":
            return
        text = layout_str.strip()
        if not text:
            raise ValidationError("Cannot parse ov::Layout from an empty string")
        if text == _SCALAR:
            self._scalar, self._dynamic = True, False
        elif len(text) >= 2 and text[0] == "[" and text[-1] == "]":
            self._parse_advanced(text)
        else:
            self._parse_simple(text)

    def _assign(self, name: str, index: int) -> None:
        dim = _internal(name)
        _validate(name)
        if dim in self._names:
            raise ValidationError(f"Dimension ({dim}) is defined multiple times in layout")
        self._names[dim] = index
        self._index_map[index] = dim

    def _parse_commas(self, body: str, index: int = 0) -> int:
        if not body:
            raise ValidationError("Empty sub-string detected while parsing layout")
        for name in body.split(","):
            name = name.strip()
            if name != "?":
                self._assign(name, index)
            index += 1
        return index

    def _parse_advanced(self, text: str) -> None:
        if len(text) <= 2:
            raise ValidationError("Cannot parse ov::Layout from an empty string")
        body = text[1:-1]
        pos = body.find(_ELLIPSIS)
        if pos < 0:
            self._dynamic, self._left = False, self._parse_commas(body)
            return
        left, right = body[:pos].strip(), body[pos + len(_ELLIPSIS):].strip()
        left_n = right_n = 0
        if left:
            if not left.endswith(","):
                raise ValidationError(f"Layout: Invalid left side ({body})")
            left_n = self._parse_commas(left[:-1])
        if right:
            if not right.startswith(","):
                raise ValidationError(f"Layout: Invalid right side ({body})")
            right = right[1:]
            right_n = right.count(",") + 1
            self._parse_commas(right, -right_n)
        self._dynamic, self._left, self._right = True, left_n, right_n

    def _parse_simple(self, text: str) -> None:
        start = text.find(_ELLIPSIS)
        backward, index, i = False, -1, 0
        while i < len(text):
            index += 1
            c = text[i].upper()
            if c == "?":
                i += 1
                continue
            if c == ".":
                if backward:
                    raise ValidationError("Multiple ... are not allowed")
                if i != start:
                    raise ValidationError("Undefined number of dimensions shall have ...")
                i += len(_ELLIPSIS)
                index += len(_ELLIPSIS) - 1
                backward = True
                index -= len(text)
                continue
            self._assign(c, index)
            i += 1
        if start >= 0:
            self._dynamic, self._left, self._right = True, start, len(text) - start - len(_ELLIPSIS)
        else:
            self._dynamic, self._left = False, len(text)

    @staticmethod
    def scalar() -> Layout:
        return Layout(_SCALAR)

    @property
    def empty(self) -> bool:
        """True for ``Layout()`` (``[...]``): nothing is known about the dimensions (a property, as in OpenVINO)."""
        return self == _EMPTY

    def has_name(self, dimension_name: str) -> bool:
        return _internal(dimension_name) in self._names

    def get_index_by_name(self, dimension_name: str) -> int:
        """Index of a named dimension; negative when it is counted from the right (``"...HW"``)."""
        name = _internal(dimension_name)
        if name not in self._names:
            raise ValidationError(f"{dimension_name} dimension index is not defined")
        return self._names[name]

    def to_string(self) -> str:
        if self._scalar:
            return _SCALAR
        dims = [self._index_map.get(i, "?") for i in range(self._left)]
        if self._dynamic:
            dims.append(_ELLIPSIS)
            dims += [self._index_map.get(i, "?") for i in range(-self._right, 0)]
        return "[" + ",".join(dims) + "]"

    def _state(self) -> tuple:
        return (self._scalar, self._dynamic, self._left, self._right, frozenset(self._names.items()))

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"<Layout: {self.to_string()}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = Layout(other)
        return isinstance(other, Layout) and self._state() == other._state()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._state())

    def __copy__(self) -> Layout:
        return self

    def __deepcopy__(self, memo: dict) -> Layout:
        return self  # immutable


_EMPTY = Layout()


def as_layout(value: Layout | str) -> Layout:
    """A Layout from a Layout or its text."""
    return value if isinstance(value, Layout) else Layout(value)


def _new(left: int, names: dict[str, int]) -> Layout:
    res = Layout()
    res._dynamic, res._left = False, left
    res._names = dict(names)
    res._index_map = {i: n for n, i in names.items()}
    return res


def is_compatible(layout: Layout, shape: Any) -> bool:
    """Whether ``shape``'s rank fits ``layout`` (a static layout fixes the rank, ``...`` sets a minimum)."""
    if layout._scalar:
        return shape.rank.is_dynamic or shape.rank.get_length() == 0
    if shape.rank.is_dynamic:
        return True
    rank, least = shape.rank.get_length(), layout._left + layout._right
    return rank >= least if layout._dynamic else rank == least


def apply_permutation(src: Layout, dims: Sequence[int]) -> Layout:
    """The layout after ``Transpose(dims)``: dimension ``i`` of the result is dimension ``dims[i]`` of ``src``."""
    used = [False] * len(dims)
    for d in dims:
        if not 0 <= d < len(dims):
            raise ValidationError(f"Convert layout: dimension {d} is out of bounds")
        if used[d]:
            raise ValidationError(f"Convert layout: dimension {d} is used more than once in convert arguments")
        used[d] = True
    if src.empty:
        return src
    if src._dynamic:
        raise ValidationError(f"Layout conversion by indexes is not supported for dynamic layout: {src}")
    names = {src._index_map[d]: i for i, d in enumerate(dims) if d in src._index_map}
    return _new(src._left, names)


def _to_static(layout: Layout, rank: Any) -> Layout:
    if not layout._dynamic:
        return layout
    if rank.is_dynamic:
        raise ValidationError("Conversion is not supported for dynamic layouts with fully dynamic shapes")
    n = rank.get_length()
    return _new(n, {name: (i + n if i < 0 else i) for name, i in layout._names.items()})


def _trivial(perm: list[int]) -> list[int]:
    return [] if perm == list(range(len(perm))) else perm


def find_permutation(src: Layout, shape: Any, dst: Layout) -> list[int]:
    """Transpose order taking a tensor of layout ``src`` (and shape ``shape``) to ``dst``; ``[]`` when none is
    needed. Unnamed dimensions keep their relative order."""
    if src == dst or src.empty or dst.empty:
        return []
    rank = shape.rank
    s, d = _to_static(src, rank), _to_static(dst, rank)
    if s._left != d._left:
        raise ValidationError(f"Conversion is not supported for layouts with different sizes, {src} <-> {dst}")
    if rank.is_static and s._left != rank.get_length():
        raise ValidationError(f"Conversion layout {src} <-> {dst} failure. Layout is not consistent with input "
                              f"shape {shape}. Layout length {s._left} shall match with input shape rank "
                              f"{rank.get_length()}")
    res = [-1] * s._left
    if len(s._names) > len(d._names):
        inverted = find_permutation(d, shape, s)
        if not inverted:
            return []
        for i, v in enumerate(inverted):
            res[v] = i
        return _trivial(res)
    mapped = [False] * s._left
    for index, name in s._index_map.items():
        if not dst.has_name(name):
            raise ValidationError(f"Dimension name '{name}' is not found in layout: {d}")
        res[d.get_index_by_name(name)] = index
        mapped[index] = True
    free = (i for i in range(s._left) if not mapped[i])
    for i in range(s._left):
        if res[i] < 0:
            res[i] = next(free)
    return _trivial(res)


def find_squeeze(src: Layout, shape: Any, dst: Layout) -> tuple[Any, Layout]:
    """When ``dst`` names fewer dimensions than the fully specified ``src`` (model ``NCHW``, tensor ``HWC``):
    ``shape`` without the dimensions ``dst`` lacks, and ``src`` restricted to the ones it keeps."""
    from vinerun.ir.shape import PartialShape

    if src._dynamic or dst._dynamic or src._left <= dst._left:
        return shape, src
    if src._left != len(src._index_map):
        raise ValidationError(f"Layout conversion {dst} <-> {src} is not supported. Please use fully specified "
                              f"model layout, current is {src}")
    if dst._left != len(dst._index_map):
        raise ValidationError(f"Layout conversion {dst} <-> {src} is not supported. Please use fully specified "
                              f"tensor layout, current is {dst}")
    if shape.rank.is_static and shape.rank.get_length() != src._left:
        raise ValidationError(f"Model input layout {src} is inconsistent with input shape {shape}. Layout and "
                              f"shape shall have same rank, got {src._left} != {shape.rank.get_length()}")
    kept = [i for i in range(src._left) if dst.has_name(src._index_map[i])]
    if len(kept) != dst._left:
        missing = " ".join(f"'{n}'" for n in dst._names if not src.has_name(n))
        raise ValidationError(f"Layout conversion failed. Tensor layout{dst} has dimensions missing in model "
                              f"layout {src}. Missing dimensions are ( {missing} )")
    names = {src._index_map[i]: j for j, i in enumerate(kept)}
    dims = PartialShape.dynamic() if shape.rank.is_dynamic else PartialShape([shape[i] for i in kept])
    return dims, _new(dst._left, names)


def find_unsqueeze(src: Layout, shape: Any, dst: Layout) -> tuple[Any, Layout, int]:
    """When ``dst`` names more dimensions than ``src``: the shape with 1s added in front, its layout, and how
    many dimensions were added."""
    from vinerun.ir.shape import PartialShape

    if src._dynamic or dst._dynamic or src._left >= dst._left:
        return shape, src, 0
    added = dst._left - src._left
    dims = None if shape.rank.is_dynamic else [1] * dst._left
    names: dict[str, int] = {}
    unset = 0
    for i in range(dst._left):
        name = dst._index_map[i]
        if src.has_name(name):
            j = src.get_index_by_name(name)
            names[name] = j + added
            if dims is not None:
                dims[j + added] = shape[j]
        else:
            names[name] = unset
            unset += 1
    return (PartialShape.dynamic() if dims is None else PartialShape(dims)), _new(dst._left, names), added
