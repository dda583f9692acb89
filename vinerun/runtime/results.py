"""``OVDict``: the read-only mapping ``infer`` returns, keyed by output port, index or name."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

import numpy as np

from vinerun.ir.node import Output


def same_port(a: Output, b: Output) -> bool:
    """Whether ``a`` and ``b`` designate the same model input or output, as OpenVINO's requests match ports.

    The same handle, or (for a port of the model a compiled model was made from) the same index of a node of
    the same type whose tensor names include all of ``b``'s (non-empty ones, else the same friendly name).
    """
    if a == b:
        return True
    na, nb = a.node, b.node
    if a.index != b.index or type(na) is not type(nb):
        return False
    names = b.get_names()
    # tensor names are unique in a model: equal names suffice (a copy may renumber auto friendly names)
    return names <= a.get_names() and (bool(names) or na.friendly_name == nb.friendly_name)


class OVDict(Mapping):
    """Outputs of one inference, as OpenVINO's ``OVDict``: read-only, keyed by port, index or tensor name.

    >>> result[compiled.output(0)], result[0], result["logits"]
    >>> out0, out1 = result.to_tuple()           # or result.values()
    >>> plain = result.to_dict()                 # a dict keyed by ports only
    """

    __slots__ = ("_dict", "__weakref__")

    def __init__(self, ports_or_dict: list[Output] | dict[Output, Any], values: list[Any] | None = None):
        self._dict: dict[Output, Any] = (dict(ports_or_dict) if values is None
                                         else dict(zip(ports_or_dict, values, strict=True)))

    def _port(self, key: Any) -> Output:
        """The port ``key`` designates; KeyError if none, TypeError for a key of another type."""
        if isinstance(key, Output):
            if key in self._dict:
                return key
            for port in self._dict:
                if same_port(port, key):
                    return port
            raise KeyError(key)
        if isinstance(key, (int, np.integer)):
            try:
                return list(self._dict)[int(key)]  # negative indices count from the end, as a list's
            except IndexError:
                raise KeyError(key) from None
        if isinstance(key, str):
            for port in self._dict:
                if key in port.get_names():
                    return port
            for port in self._dict:  # vinerun also accepts the Result's friendly name
                if key == port.node.friendly_name:
                    return port
            raise KeyError(key)
        raise TypeError(f"Unknown key type: {type(key)}")

    def __getitem__(self, key: Any) -> Any:
        return self._dict[self._port(key)]

    def __iter__(self) -> Iterator[Output]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __repr__(self) -> str:
        return repr(self._dict)

    def keys(self) -> KeysView[Output]:
        return self._dict.keys()

    def values(self) -> ValuesView[Any]:
        return self._dict.values()

    def items(self) -> ItemsView[Output, Any]:
        return self._dict.items()

    def names(self) -> tuple[set[str], ...]:
        """The tensor names of each output (an empty set for an output without names)."""
        return tuple(port.get_names() for port in self._dict)

    def to_dict(self) -> dict[Output, Any]:
        """A plain dict keyed by ports (a shallow copy: the arrays are the same)."""
        return dict(self._dict)

    def to_tuple(self) -> tuple[Any, ...]:
        """The values, in output order."""
        return tuple(self._dict.values())


#: vinerun's earlier name of the same class
InferResult = OVDict
