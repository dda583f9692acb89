"""NaN guards as one op: ``Select(IsNaN(x), c, x)`` becomes ``ReplaceNaN(x, value=c)``.

transformers' SDPA export writes ``where(isnan(p), 0, p)`` after every attention softmax (a row whose mask removes
every key gives zeros, not NaN). Where the attention fusion takes the softmax, the guard goes into its kernel; where
it does not (an int8 model's attention between Q/DQ pairs, a pattern the fusion does not match), the two-node form
is two passes over the ``[B, H, S, S]`` scores and a boolean tensor between them. Matched: the IsNaN read by the
Select alone, ``c`` a one-element constant, ``x`` floating point and the Select's output of x's shape and type.
Infinities stay as they are.
"""

from __future__ import annotations

import math

import numpy as np

from vinerun.ir.node import Attr, Node, Output
from vinerun.ops._base import UnaryElementwise
from vinerun.transformations.fusions import _FLOATS, _sole_consumer, keeps_value, scalar_constant
from vinerun.transformations.pass_infra import ReplaceMatches


class ReplaceNaN(UnaryElementwise):
    """``x`` with its NaNs replaced by ``value`` (infinities kept)."""

    type_name, version = "ReplaceNaN", "vinerun"
    value = Attr("float", 0.0)

    def fn(self, x: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(x), np.asarray(self.value, x.dtype), x)


def match_nan_guard(select: Node) -> tuple[Output, float, Node] | None:
    """(x, the replacement, the IsNaN) when ``select`` is ``Select(IsNaN(x), c, x)``, else None."""
    if select.type_name != "Select":
        return None
    cond, then, other = select.input_values()
    isnan = cond.node
    if isnan.type_name != "IsNaN" or isnan.input_value(0) != other or _sole_consumer(isnan) is not select:
        return None
    value = scalar_constant(then)
    if value is None or math.isnan(value) or other.element_type.get_type_name() not in _FLOATS:
        return None
    if not keeps_value(select, other):
        return None
    return other, value, isnan


class NanGuardFusion(ReplaceMatches):
    """Replace each ``Select(IsNaN(x), c, x)`` with ``ReplaceNaN(x, value=c)``.

    >>> NanGuardFusion()(model).modified
    True
    """

    def __init__(self) -> None:
        super().__init__(lambda match: ReplaceNaN(match[1], value=match[2], name=match[0].friendly_name))

    def match(self, node: Node) -> tuple[Node, Output, float, Node] | None:
        """(the Select, x, the replacement, the IsNaN), or None."""
        found = match_nan_guard(node)
        return None if found is None else (node, *found)

    def covered(self, match: tuple[Node, Output, float, Node]) -> tuple[Node, list[Node]]:
        return match[0], [match[0], match[3]]
