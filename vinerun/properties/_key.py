"""``Property``: a property key that is also a ``str``, as in OpenVINO.

>>> cache_dir = Property("CACHE_DIR")
>>> cache_dir == "CACHE_DIR", cache_dir("models/cache")
(True, ('CACHE_DIR', 'models/cache'))
"""

from __future__ import annotations

import enum
from typing import Any


class Property(str):
    """A property key: compares equal to its name; ``key(value)`` makes a ``(name, value)`` pair.

    Read-only keys (``mutability == "RO"``) take no value: ``key()`` returns the name, and
    ``key(value)`` raises ``TypeError`` naming the key.
    """

    mutability: str

    def __new__(cls, name: str, mutability: str = "RW") -> Property:
        key = super().__new__(cls, name)
        key.mutability = mutability
        return key

    def __call__(self, *args: Any) -> Any:
        if not args:
            return str(self)
        if self.mutability == "RO":
            raise TypeError(f"{self} is a read-only property: it can be read with get_property, not set")
        if len(args) == 1:
            return (str(self), args[0])
        return (str(self), args)

    def __repr__(self) -> str:
        return f"Property({str.__repr__(self)}, {self.mutability})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Property, (str(self), self.mutability))


def rw(name: str) -> Property:
    return Property(name, "RW")


def ro(name: str) -> Property:
    return Property(name, "RO")


class PropertyEnum(enum.IntEnum):
    """An OpenVINO-style enum: an ``int`` whose ``str`` is ``"PerformanceMode.THROUGHPUT"``."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)
