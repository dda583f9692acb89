"""Value kinds of the property table: each converts a user value to the typed value or says why not.

A kind accepts what OpenVINO users pass (enums, their names as strings, ints, ``"YES"``/``"NO"``,
``Type`` objects or ``"f32"``) and returns one canonical Python value, so ``get_property`` always
returns the same type. Errors name the property and the allowed values.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from vinerun.errors import PropertyError, PropertyTypeError
from vinerun.ir.types import Type
from vinerun.properties.streams import Num


def _show(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


class Kind:
    """Base kind: any value, kept as given."""

    allowed = "any value"

    def convert(self, key: str, value: Any) -> Any:
        return value

    def bad_value(self, key: str, value: Any) -> PropertyError:
        return PropertyError(f"Wrong value {value!r} for property {key}: expected {self.allowed}")

    def bad_type(self, key: str, value: Any) -> PropertyTypeError:
        return PropertyTypeError(f"Wrong type for property {key}: got {_show(value)}, expected {self.allowed}")


class Bool(Kind):
    allowed = "True/False (or 'YES'/'NO')"

    def convert(self, key: str, value: Any) -> bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, str):
            v = value.strip().upper()
            if v in ("YES", "TRUE"):
                return True
            if v in ("NO", "FALSE"):
                return False
            raise self.bad_value(key, value)
        raise self.bad_type(key, value)


class Int(Kind):
    def __init__(self, minimum: int | None = 0, maximum: int | None = None):
        self.minimum, self.maximum = minimum, maximum
        lo = "" if minimum is None else f" >= {minimum}"
        hi = "" if maximum is None else f" <= {maximum}"
        self.allowed = f"an integer{lo}{' and' if lo and hi else ''}{hi}"

    def convert(self, key: str, value: Any) -> int:
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise self.bad_type(key, value)
        v = int(value)
        if (self.minimum is not None and v < self.minimum) or (self.maximum is not None and v > self.maximum):
            raise self.bad_value(key, value)
        return v


class Float(Kind):
    allowed = "a number"

    def convert(self, key: str, value: Any) -> float:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                raise self.bad_value(key, value) from None
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise self.bad_type(key, value)
        return float(value)


class Str(Kind):
    allowed = "a string"

    def convert(self, key: str, value: Any) -> str:
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if not isinstance(value, str):
            raise self.bad_type(key, value)
        return str(value)


class StrList(Kind):
    allowed = "a list of strings or one comma-separated string"

    def convert(self, key: str, value: Any) -> list[str]:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return [str(v) for v in value]
        raise self.bad_type(key, value)


class EnumOf(Kind):
    """An enum: members, their names (any case), their int values, or ``aliases``."""

    def __init__(self, cls: type[enum.Enum], aliases: dict[str, str] | None = None,
                 exclude: Iterable[str] = ()):
        self.cls = cls
        self.aliases = {k.upper(): v for k, v in (aliases or {}).items()}
        self.names = [n for n, m in cls.__members__.items() if m.name == n and n not in exclude]
        self.allowed = f"one of {', '.join(self.names)}"

    def convert(self, key: str, value: Any) -> enum.Enum:
        if isinstance(value, self.cls):
            return value
        name = getattr(value, "name", None)  # another library's enum with the same names
        if isinstance(value, str) or isinstance(name, str):
            text = (value if isinstance(value, str) else name).strip().upper()
            text = self.aliases.get(text, text)
            if text in self.names:
                return self.cls[text]
            raise self.bad_value(key, value)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            try:
                return self.cls(int(value))
            except ValueError:
                raise self.bad_value(key, value) from None
        raise self.bad_type(key, value)


class Precision(Kind):
    """An element type: ``Type.bf16``, ``"bf16"``, ``"float32"``, a NumPy dtype; ``dynamic`` = model's own."""

    def __init__(self, allowed: Iterable[str]):
        self.types = [Type(a) for a in allowed]
        self.allowed = f"one of {', '.join(t.get_type_name() for t in self.types)}"

    def convert(self, key: str, value: Any) -> Type:
        if isinstance(value, str) and value.strip().lower() == "undefined":
            value = "dynamic"
        if not isinstance(value, (str, Type, np.dtype, type)) and not hasattr(value, "get_type_name"):
            raise self.bad_type(key, value)
        if hasattr(value, "get_type_name") and not isinstance(value, Type):
            value = value.get_type_name()  # e.g. openvino.Type
        try:
            t = Type(value)
        except TypeError:
            raise self.bad_value(key, value) from None
        if t not in self.types:
            raise self.bad_value(key, value)
        return t


class Streams(Kind):
    """``NUM_STREAMS``: a count >= 0, or ``streams.Num.AUTO`` / ``"AUTO"`` (-1), ``NUMA`` / ``"NUMA"`` (-2)."""

    allowed = "a number of streams >= 0, or AUTO (-1) / NUMA (-2)"

    def convert(self, key: str, value: Any) -> int:
        if isinstance(value, str):
            text = value.strip().upper()
            if text in ("AUTO", "NUMA"):
                return Num.AUTO if text == "AUTO" else Num.NUMA
            if not text.lstrip("-").isdigit():
                raise self.bad_value(key, value)
            value = int(text)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise self.bad_type(key, value)
        v = int(value)
        if v < -2:
            raise self.bad_value(key, value)
        return Num(v) if v < 0 else v


class DictOf(Kind):
    allowed = "a dict"

    def convert(self, key: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.bad_type(key, value)
        return {str(k): v for k, v in value.items()}
