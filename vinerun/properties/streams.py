"""``properties.streams``: the number of streams (parallel executors) of a compiled model."""

from __future__ import annotations

from typing import Any

from vinerun.properties._key import INT32, ValueSpec, _Mismatch, name_keys, rw


class Num(int):
    """A stream count: a non-negative int, or ``Num.AUTO`` (-1, also ``Num()``) / ``Num.NUMA`` (-2).

    >>> Num.AUTO.to_integer(), Num(4).to_integer(), Num().to_integer()
    (-1, 4, -1)
    """

    AUTO: Num
    NUMA: Num

    def __new__(cls, value: int = -1) -> Num:
        return super().__new__(cls, value)

    def to_integer(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return {-1: "Num.AUTO", -2: "Num.NUMA"}.get(int(self), f"Num({int(self)})")


Num.AUTO = Num(-1)
Num.NUMA = Num(-2)


def _num(value: Any) -> int:
    # A Num or a plain int; the pair holds the integer (OpenVINO's OVAny gives an int back).
    if isinstance(value, Num):
        return int(value)
    return INT32.convert(value)


def _num_only(value: Any) -> int:
    if not isinstance(value, Num):
        raise _Mismatch
    return int(value)


#: what ``streams.num`` accepts (a ``Num`` or an int); ``properties.num_streams`` takes a ``Num`` only
NUM = ValueSpec("Num | int", _num)
NUM_ONLY = ValueSpec("Num", _num_only)

num = rw("NUM_STREAMS", NUM)

name_keys(globals())
