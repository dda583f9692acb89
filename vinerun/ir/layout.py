"""``Layout("NCHW")``: names for the dimensions of a tensor, as in OpenVINO."""

from __future__ import annotations

import re


class Layout:
    """A tensor layout such as ``"NCHW"``, ``"NC..."`` or ``"[N,C,H,W]"``."""

    __slots__ = ("_names", "_text")

    def __init__(self, text: str = ""):
        self._text = text.strip()
        body = self._text
        if body.startswith("[") and body.endswith("]"):
            names = [p.strip() for p in body[1:-1].split(",") if p.strip()]
        else:
            names = re.findall(r"\.\.\.|\?|[A-Za-z]", body)
        self._names = [n.upper() for n in names]
        for n in self._names:
            if n != "..." and n != "?" and self._names.count(n) > 1:
                raise ValueError(f"Layout '{text}' names dimension '{n}' twice")

    def empty(self) -> bool:
        return not self._names

    def has_name(self, name: str) -> bool:
        return name.upper() in self._names

    def get_index_by_name(self, name: str) -> int:
        name = name.upper()
        if name not in self._names:
            raise ValueError(f"Layout {self} has no dimension '{name}'")
        i = self._names.index(name)
        if "..." in self._names[:i]:
            return i - len(self._names)
        return i

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def to_string(self) -> str:
        if all(len(n) == 1 or n == "..." for n in self._names):
            return "[" + ",".join(self._names) + "]"
        return "[" + ",".join(self._names) + "]"

    @staticmethod
    def scalar() -> Layout:
        return Layout("**")

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"<Layout: {self.to_string()}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = Layout(other)
        return isinstance(other, Layout) and self._names == other._names

    def __hash__(self) -> int:
        return hash(tuple(self._names))
