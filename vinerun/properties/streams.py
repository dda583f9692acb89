"""``properties.streams``: the number of streams (parallel executors) of a compiled model."""

from __future__ import annotations

from vinerun.properties._key import rw


class Num(int):
    """A stream count: a non-negative int, or ``Num.AUTO`` (-1) / ``Num.NUMA`` (-2).

    >>> Num.AUTO.to_integer(), Num(4).to_integer()
    (-1, 4)
    """

    AUTO: Num
    NUMA: Num

    def to_integer(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return {-1: "Num.AUTO", -2: "Num.NUMA"}.get(int(self), f"Num({int(self)})")


Num.AUTO = Num(-1)
Num.NUMA = Num(-2)

num = rw("NUM_STREAMS")
