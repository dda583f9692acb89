"""``Property``: a property key that is also a ``str``, and OpenVINO-style enums.

>>> cache_dir = Property("CACHE_DIR", value=STR)
>>> cache_dir == "CACHE_DIR", cache_dir(), cache_dir("models/cache")[1].value
(True, 'CACHE_DIR', 'models/cache')

As in OpenVINO, ``key(value)`` checks the value's type (``enable_profiling`` takes a bool, ``cache_dir`` a str,
``performance_mode`` a ``PerformanceMode``...) and returns ``(name, OVAny(value))``; a value of another type
raises ``TypeError`` ("incompatible function arguments").
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable
from typing import Any

import numpy as np


class _Mismatch(Exception):
    """The value does not fit the property's value type."""


class ValueSpec:
    """What a property function accepts: ``describe`` names the type in errors, ``convert`` turns an accepted
    value into the stored one (raising ``_Mismatch`` otherwise)."""

    def __init__(self, describe: str, convert: Callable[[Any], Any]) -> None:
        self.describe = describe
        self._convert = convert

    def convert(self, value: Any) -> Any:
        return self._convert(value)


def _bool(value: Any) -> bool:
    # As pybind11's bool: Python and NumPy numbers convert (1 -> True), strings and other objects do not.
    if isinstance(value, (bool, int, float, np.bool_, np.number)):
        return bool(value)
    raise _Mismatch


def _int(lo: int, hi: int) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        if isinstance(value, (float, np.floating, str, bytes)):
            raise _Mismatch
        try:
            number = operator.index(value)
        except TypeError:
            raise _Mismatch from None
        if not lo <= number <= hi:
            raise _Mismatch
        return number
    return convert


def _float(single: bool) -> Callable[[Any], float]:
    def convert(value: Any) -> float:
        if isinstance(value, (str, bytes)) or not isinstance(value, (int, float, np.number)):
            raise _Mismatch
        return float(np.float32(value)) if single else float(value)
    return convert


def _str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        return str(value)
    raise _Mismatch


def _instance(resolve: Callable[[], type]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if not isinstance(value, resolve()):
            raise _Mismatch
        return value
    return convert


def ovany(value: Any) -> Any:
    """``OVAny(value)`` (the class lives in the ir layer, below this one: looked up when a pair is made)."""
    from vinerun.ir.rt_map import OVAny

    return OVAny(unwrap(value))


def unwrap(value: Any) -> Any:
    """``value`` with each ``OVAny`` in it (also inside dicts, lists, tuples) replaced by what it holds."""
    from vinerun.ir.rt_map import OVAny

    if isinstance(value, OVAny):
        return unwrap(value.value)
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def _ir_class(name: str) -> Callable[[], type]:
    # The ir layer sits below this one (DESIGN.md): look its classes up when a value is checked, not at import.
    def resolve() -> type:
        import vinerun.ir as ir

        return getattr(ir, name)
    return resolve


BOOL = ValueSpec("bool", _bool)
INT32 = ValueSpec("int", _int(-2**31, 2**31 - 1))
UINT32 = ValueSpec("int (unsigned)", _int(0, 2**32 - 1))
INT64 = ValueSpec("int", _int(-2**63, 2**63 - 1))
UINT64 = ValueSpec("int (unsigned)", _int(0, 2**64 - 1))
FLOAT32 = ValueSpec("float", _float(True))
STR = ValueSpec("str", _str)
TYPE = ValueSpec("Type", _instance(_ir_class("Type")))
TENSOR = ValueSpec("Tensor", _instance(_ir_class("Tensor")))
MODEL = ValueSpec("Model", _instance(_ir_class("Model")))
ANY = ValueSpec("object", unwrap)


def enum_of(cls: type) -> ValueSpec:
    """Values that are members of ``cls`` (not ints: as OpenVINO's enum arguments)."""
    return ValueSpec(cls.__name__, _instance(lambda: cls))


def set_of(cls: type) -> ValueSpec:
    """A ``set`` of members of ``cls``."""
    def convert(value: Any) -> set[Any]:
        if not isinstance(value, (set, frozenset)) or not all(isinstance(v, cls) for v in value):
            raise _Mismatch
        return set(value)
    return ValueSpec(f"Set[{cls.__name__}]", convert)


class Property(str):
    """A property key: compares equal to its name; ``key()`` is the name, ``key(value)`` a ``(name, OVAny)`` pair.

    Read-only keys (``mutability == "RO"``) take no value.
    """

    mutability: str
    spec: ValueSpec | None
    #: the function name OpenVINO gives the key (``enable_profiling`` for ``PERF_COUNT``), for error messages
    fname: str

    def __new__(cls, name: str, mutability: str = "RW", value: ValueSpec | None = None) -> Property:
        key = super().__new__(cls, name)
        key.mutability = mutability
        key.spec = (value or ANY) if mutability == "RW" else None
        key.fname = name.lower()
        return key

    def __call__(self, *args: Any) -> Any:
        if not args:
            return str(self)
        if self.spec is None or len(args) != 1:
            raise self._incompatible(args)
        try:
            value = self.spec.convert(args[0])
        except _Mismatch:
            raise self._incompatible(args) from None
        return (str(self), ovany(value))

    def _incompatible(self, args: tuple[Any, ...]) -> TypeError:
        forms = ["() -> str"]
        if self.spec is not None:
            forms.append(f"(arg0: {self.spec.describe}) -> tuple[str, OVAny]")
        listed = "\n".join(f"    {i}. {form}" for i, form in enumerate(forms, 1))
        invoked = ", ".join(repr(a) for a in args)
        return TypeError(f"{self.fname}(): incompatible function arguments. The following argument types are "
                         f"supported:\n{listed}\n\nInvoked with: {invoked}")

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled as a plain key (the value check holds closures): the copy takes values of any type
        return (Property, (str(self), self.mutability))


def rw(name: str, value: ValueSpec = ANY) -> Property:
    return Property(name, "RW", value)


def ro(name: str) -> Property:
    return Property(name, "RO")


def name_keys(namespace: dict[str, Any]) -> None:
    """Give each ``Property`` of a module the function name it is bound to (for error messages)."""
    for fname, key in namespace.items():
        if isinstance(key, Property) and not fname.startswith("_"):
            key.fname = fname


class _PropertyEnumType(enum.EnumMeta):
    """Adds OpenVINO's ``__entries`` (name -> ``(member, doc)``, aliases included) to each enum class."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: Any, **kwargs: Any) -> type:
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        type.__setattr__(cls, "__entries", {n: (m, None) for n, m in cls.__members__.items()})
        return cls


class PropertyEnum(enum.IntEnum, metaclass=_PropertyEnumType):
    """An OpenVINO-style enum: ``str`` is ``"PerformanceMode.THROUGHPUT"``, ``int`` its value, ``.name`` /
    ``.value`` / ``__entries`` as OpenVINO's. (It is an ``int`` too, so it also equals its value.)"""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)
