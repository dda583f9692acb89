"""``Symbol``: a name for an unknown value (a dimension, or an element of a shape tensor).

Two dimensions carrying equal symbols are known to be equal. Symbols merge into equivalence classes
(``Symbol.set_equal``); two symbols compare equal when they belong to the same class, as OpenVINO's
``ov::symbol::are_equal`` does. ``Dimension.get_symbol()`` returns None for a dimension without one.
"""

from __future__ import annotations


class Symbol:
    """A new symbol, distinct from every other: ``Symbol()``."""

    __slots__ = ("_parent",)

    def __init__(self) -> None:
        self._parent: Symbol | None = None

    def root(self) -> Symbol:
        """The representative of this symbol's equivalence class."""
        s = self
        while s._parent is not None:
            s = s._parent
        return s

    def set_equal(self, other: Symbol) -> None:
        """Record that this symbol and ``other`` stand for the same value."""
        a, b = self.root(), other.root()
        if a is not b:
            b._parent = a

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Symbol):
            return NotImplemented
        return self.root() is other.root()

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(id(self.root()))

    def __repr__(self) -> str:
        return f"<Symbol: {id(self.root()):#x}>"
