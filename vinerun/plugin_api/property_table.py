"""The typed property table: each property declared once (kind, RO/RW, default), checked in one place.

A device declares its properties as a :class:`PropertyTable`; a :class:`PropertyValues` holds one
configuration of it (the plugin's, or a compiled model's). ``SUPPORTED_PROPERTIES`` is derived
from the table, and every error (unknown key, read-only key, bad value, wrong type) is written here.

>>> from vinerun.plugin_api.property_kinds import Bool, Int
>>> table = PropertyTable("CPU plugin", [Prop("PERF_COUNT", Bool(), default=False),
...                                      Prop("RANGE_FOR_STREAMS", default=lambda: (1, 2), mutability="RO")])
>>> values = PropertyValues(table)
>>> values.set({"PERF_COUNT": "YES"})
>>> values.get("PERF_COUNT"), values.get("RANGE_FOR_STREAMS"), table.supported()
(True, (1, 2), {'PERF_COUNT': 'RW', 'RANGE_FOR_STREAMS': 'RO', 'SUPPORTED_PROPERTIES': 'RO'})
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from vinerun.errors import PropertyError
from vinerun.plugin_api.property_kinds import Kind

SUPPORTED_PROPERTIES = "SUPPORTED_PROPERTIES"
#: config keys that belong to the model cache, not to a compiled model (an export leaves them out)
CACHE_KEYS = ("CACHE_DIR", "CACHE_MAX_SIZE")


def plain_value(value: Any) -> Any:
    """A property value as JSON can hold it and a property table reads back: enums by name, Types by type
    name, lists and dicts element by element, the rest by ``str``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return value.name
    if hasattr(value, "get_type_name"):
        return value.get_type_name()
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    return str(value)


@dataclass(frozen=True)
class Prop:
    """One property: ``default`` is a value, or a zero-argument callable for facts read on demand."""

    name: str
    kind: Kind = field(default_factory=Kind)
    default: Any = None
    mutability: str = "RW"
    doc: str = ""

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default


class PropertyTable:
    """The properties of one owner (``"CPU plugin"``, ``"CPU compiled model"``), by name."""

    def __init__(self, owner: str, props: Iterable[Prop]):
        self.owner = owner
        self.props: dict[str, Prop] = {p.name: p for p in props}

    def supported(self) -> dict[str, str]:
        """``{name: "RO" | "RW"}``, the value of ``SUPPORTED_PROPERTIES``."""
        out = {name: p.mutability for name, p in self.props.items()}
        out[SUPPORTED_PROPERTIES] = "RO"
        return out

    def __contains__(self, key: object) -> bool:
        return str(key) in self.props or str(key) == SUPPORTED_PROPERTIES

    def spec(self, key: str) -> Prop:
        try:
            return self.props[str(key)]
        except KeyError:
            raise PropertyError(f"Unsupported property {key} by {self.owner}. "
                                f"Supported properties: {', '.join(sorted(self.supported()))}") from None

    def convert(self, key: str, value: Any) -> Any:
        """The typed value of ``key`` for ``value``; errors for unknown or read-only keys and bad values."""
        spec = self.spec(key)
        if spec.mutability == "RO":
            raise PropertyError(f"Property {key} of {self.owner} is read-only")
        return spec.kind.convert(str(key), value)

    def convert_all(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {str(k): self.convert(k, v) for k, v in config.items()}

    def derive(self, owner: str, names: Iterable[str] | None = None, mutability: str = "RO",
               extra: Iterable[Prop] = ()) -> PropertyTable:
        """A table for another owner, e.g. the compiled model's read-only view of the plugin's table."""
        chosen = self.props.values() if names is None else [self.props[n] for n in names]
        return PropertyTable(owner, [*(replace(p, mutability=mutability) for p in chosen), *extra])


class PropertyValues:
    """One configuration of a table: defaults, overridden by what was set; remembers what was set.

    ``computed`` maps names to callables for values that depend on the owner's state
    (e.g. a compiled model's ``OPTIMAL_NUMBER_OF_INFER_REQUESTS``).
    """

    def __init__(self, table: PropertyTable, values: Mapping[str, Any] | None = None,
                 computed: Mapping[str, Callable[[], Any]] | None = None, explicit: Iterable[str] = ()):
        self.table = table
        self.values: dict[str, Any] = dict(values or {})
        self.computed: dict[str, Callable[[], Any]] = dict(computed or {})
        self.explicit: set[str] = set(explicit)

    def set(self, config: Mapping[str, Any]) -> None:
        """Validate all of ``config`` first, then store it (nothing is stored if one value is bad)."""
        converted = self.table.convert_all(config)
        self.values.update(converted)
        self.explicit.update(converted)

    def get(self, key: str) -> Any:
        key = str(key)
        if key == SUPPORTED_PROPERTIES:
            return self.table.supported()
        spec = self.table.spec(key)
        if key in self.computed:
            return self.computed[key]()
        if key in self.values:
            return self.values[key]
        return spec.default_value()

    def is_set(self, key: str) -> bool:
        """Whether the user set ``key`` (as opposed to it holding its default)."""
        return key in self.explicit

    def copy(self) -> PropertyValues:
        return PropertyValues(self.table, self.values, self.computed, self.explicit)

    def as_dict(self) -> dict[str, Any]:
        """Every property with its current value (read-only facts included)."""
        return {k: self.get(k) for k in self.table.props}
