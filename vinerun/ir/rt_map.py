"""Runtime info as OpenVINO's Python API shows it: ``OVAny`` (one value) and ``RTMap`` (a node's, port's or
model's ``rt_info``).

vinerun keeps runtime info in plain dicts (nested dicts for maps); ``RTMap`` is a live view of such a dict
that hands values out the way OpenVINO does: a leaf as an ``OVAny``, a nested map as a ``dict`` of ``OVAny``.
Values read back from an IR file are strings; ``OVAny.astype`` / ``aslist`` convert them as OpenVINO does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def _to_bool(v: Any) -> bool:
    if isinstance(v, str):
        low = v.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise RuntimeError(f"Cannot convert '{v}' to bool")
    return bool(v)


def _to_str(v: Any) -> str:
    if isinstance(v, bool):
        return "YES" if v else "NO"  # OpenVINO's text for a bool
    if isinstance(v, (list, tuple)):
        return " ".join(_to_str(x) for x in v)
    return str(v)


def _unwrap(value: Any) -> Any:
    if isinstance(value, OVAny):
        return value.value
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def wrap_value(value: Any) -> Any:
    """How OpenVINO hands out a stored value: a dict as a dict of wrapped values, anything else as OVAny."""
    if isinstance(value, dict):
        return {k: wrap_value(v) for k, v in value.items()}
    return OVAny(value)


class OVAny:
    """A value of any type: ``OVAny(value)``; ``.value`` / ``.get()`` give it back, ``.astype(t)`` converts."""

    __slots__ = ("_value",)

    def __init__(self, value: Any):
        self._value = _unwrap(value)

    @property
    def value(self) -> Any:
        return self._value

    def get(self) -> Any:
        return self._value

    def set(self, value: Any) -> None:
        self._value = _unwrap(value)

    def astype(self, dtype: type) -> Any:
        """The value as ``bool``, ``str``, ``int``, ``float`` or ``dict`` (of OVAny), converting text."""
        v = self._value
        if dtype is bool:
            return _to_bool(v)
        if dtype is str:
            return _to_str(v)
        if dtype is int:
            return int(v.strip()) if isinstance(v, str) else int(v)
        if dtype is float:
            return float(v.strip()) if isinstance(v, str) else float(v)
        if dtype is dict:
            if not isinstance(v, dict):
                raise RuntimeError(f"Cannot cast a {type(v).__name__} value to dict")
            return {k: wrap_value(x) for k, x in v.items()}
        raise RuntimeError(f"Unsupported data type : '{dtype}' is passed as an argument.")

    def aslist(self, dtype: type | None = None) -> list:
        """The value as a list of ``dtype``; without ``dtype`` an empty list (as OpenVINO)."""
        v = self._value
        if dtype is None or (isinstance(v, (list, tuple)) and not v):
            return []
        items = list(v) if isinstance(v, (list, tuple)) else str(v).split()
        if dtype not in (bool, str, int, float):
            raise RuntimeError(f"Unsupported data type : '{dtype}' is passed as an argument.")
        return [OVAny(x).astype(dtype) for x in items]

    def __eq__(self, other: object) -> bool:
        other_value = other._value if isinstance(other, OVAny) else other
        try:
            return bool(self._value == other_value)
        except Exception:  # e.g. arrays of different shapes
            return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._value)

    def __getitem__(self, key: Any) -> Any:
        return self._value[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._value[key] = value

    def __len__(self) -> int:
        return len(self._value)

    def __repr__(self) -> str:
        return "<OVAny class>"


class RTMap:
    """A live view of a runtime-info dict, as OpenVINO's ``RTMap``.

    ``rt[key]``, ``items()`` and ``values()`` give leaves as ``OVAny`` and nested maps as dicts of ``OVAny``;
    assignment stores the plain value. ``get``, ``pop``, ``update`` and ``setdefault`` (vinerun's additions,
    OpenVINO's RTMap has none) work on the plain stored values.
    """

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any] | None = None):
        self._data: dict[str, Any] = {} if data is None else data

    def __getitem__(self, key: str) -> Any:
        return wrap_value(self._data[key])

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[key] = _unwrap(value)

    def __delitem__(self, key: str) -> None:
        del self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))

    def __len__(self) -> int:
        return len(self._data)

    def __bool__(self) -> bool:
        return bool(self._data)

    def keys(self) -> list[str]:
        return list(self._data)

    def values(self) -> list[Any]:
        return [wrap_value(v) for v in self._data.values()]

    def items(self) -> list[tuple[str, Any]]:
        return [(k, wrap_value(v)) for k, v in self._data.items()]

    # --- vinerun's dict-style conveniences on the plain values ---------------------------
    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def pop(self, key: str, *default: Any) -> Any:
        return self._data.pop(key, *default)

    def update(self, other: Any = (), **kw: Any) -> None:
        src = other._data if isinstance(other, RTMap) else dict(other)
        self._data.update({k: _unwrap(v) for k, v in {**src, **kw}.items()})

    def setdefault(self, key: str, default: Any = None) -> Any:
        return self._data.setdefault(key, _unwrap(default))

    def to_dict(self) -> dict[str, Any]:
        """The stored plain values: the live dict this map is a view of."""
        return self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RTMap):
            return self._data == other._data
        if isinstance(other, dict):
            return self._data == _unwrap(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "<RTMap>"
