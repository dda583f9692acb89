"""OpenVINO's pattern language for graph rewrites: :class:`WrapType` (a node of given types over given
input patterns), :class:`AnyInput`, :class:`Or`, :class:`Optional`, predicates, and the :class:`Matcher`
that matches a pattern at one node and records which graph value each pattern node matched.

>>> x = AnyInput()
>>> relu = WrapType("opset13::Relu", x)
>>> m = Matcher(relu, "FindRelu")
>>> m.match(node.output(0)), m.get_pattern_value_map()[x]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from vinerun.ir.node import Node, Output
from vinerun.ir.types import Type


class Predicate:
    """A check on a matched output: ``Predicate(lambda output: ...)``; predicates combine with ``&``."""

    def __init__(self, fn: Callable[..., bool] | None = None, name: str = "predicate"):
        self._fn = fn or (lambda _out: True)
        self.name = name

    def __call__(self, out: Output) -> bool:
        return bool(self._fn(out))

    def __and__(self, other: Predicate) -> Predicate:
        return Predicate(lambda o: self(o) and other(o), f"{self.name} && {other.name}")


def _as_predicate(pred: Any) -> Predicate | None:
    if pred is None or isinstance(pred, Predicate):
        return pred
    if callable(pred):
        return Predicate(pred)
    raise TypeError(f"expected a predicate (a callable on an Output), got {type(pred).__name__}")


def consumers_count(n: int) -> Predicate:
    return Predicate(lambda o: len(o.get_target_inputs()) == n, f"consumers_count({n})")


def has_static_dim(pos: int) -> Predicate:
    return Predicate(lambda o: o.partial_shape.rank.is_static and len(list(o.partial_shape)) > pos
                     and o.partial_shape[pos].is_static, f"has_static_dim({pos})")


def has_static_dims(dims: Sequence[int]) -> Predicate:
    return Predicate(lambda o: all(has_static_dim(d)(o) for d in dims), f"has_static_dims({list(dims)})")


def has_static_shape() -> Predicate:
    return Predicate(lambda o: o.partial_shape.is_static, "has_static_shape")


def has_static_rank() -> Predicate:
    return Predicate(lambda o: o.partial_shape.rank.is_static, "has_static_rank")


def rank_equals(rank: int) -> Predicate:
    return Predicate(lambda o: o.partial_shape.rank.is_static and len(list(o.partial_shape)) == rank,
                     f"rank_equals({rank})")


def type_matches(element_type: Any) -> Predicate:
    et = Type(element_type)
    return Predicate(lambda o: o.element_type == et, f"type_matches({et})")


def type_matches_any(element_types: Sequence[Any]) -> Predicate:
    ets = [Type(t) for t in element_types]
    return Predicate(lambda o: o.element_type in ets, "type_matches_any")


def shape_matches(shape: Any) -> Predicate:
    from vinerun.ir.shape import as_partial_shape

    ps = as_partial_shape(shape)
    return Predicate(lambda o: o.partial_shape.compatible(ps), f"shape_matches({ps})")


class PatternOutput:
    """Output ``index`` of a pattern node (what ``pattern.output(i)`` gives)."""

    __slots__ = ("pattern", "index")

    def __init__(self, pattern: PatternNode, index: int):
        self.pattern = pattern
        self.index = index

    def get_node(self) -> PatternNode:
        return self.pattern


class PatternNode:
    """Base of the pattern classes."""

    def __init__(self, predicate: Any = None):
        self.predicate = _as_predicate(predicate)
        self._friendly_name = f"{type(self).__name__}_{id(self):x}"

    def output(self, index: int) -> PatternOutput:
        return PatternOutput(self, index)

    def get_friendly_name(self) -> str:
        return self._friendly_name

    def set_friendly_name(self, name: str) -> None:
        self._friendly_name = name

    friendly_name = property(get_friendly_name, set_friendly_name)

    def _ok(self, out: Output) -> bool:
        return self.predicate is None or self.predicate(out)

    def _match(self, out: Output, index: int, found: dict[Any, Output], m: Matcher) -> bool:
        raise NotImplementedError


def _split_input(value: Any) -> tuple[Any, int]:
    """(pattern or graph value, expected output index) for a pattern input."""
    if isinstance(value, PatternOutput):
        return value.pattern, value.index
    if isinstance(value, PatternNode):
        return value, 0
    if isinstance(value, Output):
        return value, value.index
    if isinstance(value, Node):
        return value.output(0), 0
    raise TypeError(f"a pattern input must be a pattern, a Node or an Output, got {type(value).__name__}")


def _match_value(pattern: Any, index: int, out: Output, found: dict[Any, Output], m: Matcher) -> bool:
    if isinstance(pattern, Output):  # a concrete graph value in the pattern matches only itself
        return pattern == out
    return pattern._match(out, index, found, m)


def _type_names(types: str | Sequence[str]) -> list[tuple[str, str | None]]:
    """``"opset13::Relu"`` / ``"opset13.Relu"`` / ``"Relu"`` -> (type name, opset or None)."""
    out = []
    for t in [types] if isinstance(types, str) else list(types):
        if not isinstance(t, str):
            t = getattr(t, "type_name", None) or str(t)  # an op class
        for sep in ("::", "."):
            if sep in t:
                opset, name = t.split(sep, 1)
                out.append((name, opset))
                break
        else:
            out.append((t, None))
    return out


def _version_ok(node: Node, opset: str | None) -> bool:
    """Whether ``node``'s op is the one opset ``opset`` holds (the newest version not after it)."""
    if opset is None or not opset.startswith("opset") or not opset[5:].isdigit():
        return True
    from vinerun.ir.registry import get_op_class

    try:
        return type(node) is get_op_class(node.type_name, opset) or isinstance(node, get_op_class(node.type_name,
                                                                                                    opset))
    except Exception:
        return False


class AnyInput(PatternNode):
    """Matches any value (that satisfies ``predicate``)."""

    def _match(self, out: Output, index: int, found: dict[Any, Output], m: Matcher) -> bool:
        if not self._ok(out):
            return False
        found[self] = out
        return True


class WrapType(PatternNode):
    """A node of one of ``types`` whose inputs match ``inputs`` (any inputs when none are given)."""

    def __init__(self, types: str | Sequence[str], inputs: Any = None, predicate: Any = None):
        if predicate is None and inputs is not None and (isinstance(inputs, Predicate) or (
                callable(inputs) and not isinstance(inputs, (PatternNode, PatternOutput, Node, Output)))):
            inputs, predicate = None, inputs
        super().__init__(predicate)
        self.types = _type_names(types)
        if inputs is None:
            inputs = []
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        self.inputs = [_split_input(v) for v in inputs]

    def _type_ok(self, node: Node) -> bool:
        return any(node.type_name == name and _version_ok(node, opset) for name, opset in self.types)

    def _match(self, out: Output, index: int, found: dict[Any, Output], m: Matcher) -> bool:
        node = out.node
        if out.index != index or not self._type_ok(node) or not self._ok(out):
            return False
        if self.inputs:
            if node.get_input_size() != len(self.inputs):
                return False
            trial = dict(found)
            for (pattern, pidx), src in zip(self.inputs, node.input_values(), strict=True):
                if src is None or not _match_value(pattern, pidx, src, trial, m):
                    return False
            found.clear()
            found.update(trial)
        found[self] = out
        m._nodes.append(node)
        return True


class Or(PatternNode):
    """Matches what the first matching of ``patterns`` matches."""

    def __init__(self, patterns: Sequence[Any]):
        super().__init__()
        self.patterns = [_split_input(p) for p in patterns]

    def _match(self, out: Output, index: int, found: dict[Any, Output], m: Matcher) -> bool:
        for pattern, pidx in self.patterns:
            trial = dict(found)
            if _match_value(pattern, pidx, out, trial, m):
                found.clear()
                found.update(trial)
                found[self] = out
                return True
        return False


class Optional(PatternNode):
    """A node of one of ``types`` over ``inputs``, or, when there is none, what its single input matches."""

    def __init__(self, types: str | Sequence[str], inputs: Any = None, predicate: Any = None):
        super().__init__(predicate)
        self._wrap = WrapType(types, inputs, predicate)
        if len(self._wrap.inputs) > 1:
            raise ValueError("Optional takes at most one input pattern")

    def _match(self, out: Output, index: int, found: dict[Any, Output], m: Matcher) -> bool:
        trial = dict(found)
        if self._wrap._match(out, index, trial, m):
            found.clear()
            found.update(trial)
            found[self] = out
            return True
        if not self._wrap.inputs:
            return False
        pattern, pidx = self._wrap.inputs[0]
        return _match_value(pattern, pidx, out, found, m)


class Matcher:
    """Matches ``pattern`` at a graph value: ``Matcher(pattern, name).match(output_or_node)``."""

    def __init__(self, pattern: Any, name: str = "Matcher"):
        self.pattern, self.index = _split_input(pattern) if not isinstance(pattern, Node) else (pattern.output(0), 0)
        self.name = name
        self._map: dict[Any, Output] = {}
        self._nodes: list[Node] = []
        self._root: Output | None = None

    def get_name(self) -> str:
        return self.name

    def match(self, value: Output | Node) -> bool:
        out = value if isinstance(value, Output) else value.output(0)
        self._map, self._nodes, self._root = {}, [], None
        found: dict[Any, Output] = {}
        if not _match_value(self.pattern, self.index, out, found, self):
            self._nodes = []
            return False
        self._map, self._root = found, out
        return True

    def get_match_root(self) -> Node:
        if self._root is None:
            raise RuntimeError(f"Matcher '{self.name}' has no match")
        return self._root.node

    def get_match_value(self) -> Output:
        if self._root is None:
            raise RuntimeError(f"Matcher '{self.name}' has no match")
        return self._root

    def get_pattern_value_map(self) -> dict[Any, Output]:
        return dict(self._map)

    def get_pattern_map(self) -> dict[Any, Node]:
        return {k: v.node for k, v in self._map.items()}

    def get_match_nodes(self) -> list[Node]:
        return list(dict.fromkeys(self._nodes))

    def get_match_values(self) -> list[Output]:
        return list(self._map.values())

    def __repr__(self) -> str:
        return f"<Matcher: {self.name}>"
