"""``InferResult``: the dict-like returned by ``infer``, keyed by output port, index or name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from vinerun.ir.node import Output


class InferResult(Mapping):
    """Outputs of one inference (OpenVINO's ``OVDict``).

    >>> result[compiled.output(0)], result[0], result["logits"], result.to_tuple()
    """

    def __init__(self, ports: list[Output], values: list[Any]):
        self._ports = ports
        self._values = values

    def _index(self, key: Any) -> int:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= int(key) < len(self._values):
                raise KeyError(f"Output index {key} is out of range (the model has {len(self._values)} outputs)")
            return int(key)
        if isinstance(key, Output):
            for i, p in enumerate(self._ports):
                if p == key:
                    return i
            names = key.get_names()
            for i, p in enumerate(self._ports):
                if names and names & p.get_names():
                    return i
            raise KeyError(f"{key} is not an output of this model")
        if isinstance(key, str):
            for i, p in enumerate(self._ports):
                if key in p.get_names() or key == p.node.friendly_name:
                    return i
            known = sorted(n for p in self._ports for n in p.get_names())
            raise KeyError(f"No output named '{key}'. Outputs: {known}")
        raise TypeError(f"Outputs are keyed by port, index or name, not {type(key).__name__}")

    def __getitem__(self, key: Any) -> Any:
        return self._values[self._index(key)]

    def __iter__(self) -> Iterator[Output]:
        return iter(self._ports)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return repr(dict(zip(self._ports, self._values, strict=True)))

    def keys(self):  # type: ignore[override]
        return list(self._ports)

    def values(self):  # type: ignore[override]
        return list(self._values)

    def items(self):  # type: ignore[override]
        return list(zip(self._ports, self._values, strict=True))

    def names(self) -> tuple[set[str], ...]:
        return tuple(p.get_names() for p in self._ports)

    def to_dict(self) -> dict[Output, Any]:
        return dict(zip(self._ports, self._values, strict=True))

    def to_tuple(self) -> tuple[Any, ...]:
        return tuple(self._values)
