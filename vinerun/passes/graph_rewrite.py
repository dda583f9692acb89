"""Pattern-driven passes: :class:`MatcherPass` (one pattern and a callback) and :class:`GraphRewrite`
(several matcher passes run over every node of a model, first to last; :class:`BackwardGraphRewrite`
last to first)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vinerun.ir.node import Node
from vinerun.passes.model_pass import ModelPass, PassBase
from vinerun.passes.pattern import Matcher


class MatcherPass(PassBase):
    """``register_matcher(Matcher(pattern, name), callback)``; ``callback(matcher) -> bool`` rewrites a match.

    Also constructible directly: ``MatcherPass(matcher, callback)``.
    """

    def __init__(self, matcher: Matcher | None = None, callback: Callable[[Matcher], bool] | None = None):
        super().__init__()
        self._matcher: Matcher | None = None
        self._callback: Callable[[Matcher], bool] | None = None
        self._new_nodes: list[Node] = []
        if matcher is not None:
            self.register_matcher(matcher, callback)

    def register_matcher(self, matcher: Matcher, callback: Callable[[Matcher], bool] | None) -> None:
        if callback is None:
            raise TypeError("register_matcher() needs a callback(matcher) -> bool")
        self._matcher, self._callback = matcher, callback
        if getattr(self, "_name", None) is None:
            self._name = matcher.get_name()

    def register_new_node(self, node: Node) -> Node:
        """Record a node the callback made, so a GraphRewrite also visits it."""
        self._new_nodes.append(node)
        return node

    def apply(self, node: Node) -> bool:
        """Try the pattern at each output of ``node``; run the callback on a match."""
        if self._matcher is None or self._callback is None:
            raise RuntimeError(f"MatcherPass '{self.get_name()}' has no registered matcher")
        for out in node.outputs():
            if self._matcher.match(out):
                return bool(self._callback(self._matcher))
        return False

    def run_on_model(self, model: Any) -> bool:
        return GraphRewrite(self).run_on_model(model)


class GraphRewrite(ModelPass):
    """Runs its matcher passes on every node of the model until a full sweep changes nothing."""

    _backward = False

    def __init__(self, *passes: MatcherPass):
        super().__init__()
        self._passes: list[MatcherPass] = []
        for p in passes:
            self.add_matcher(p)

    def add_matcher(self, pass_: MatcherPass) -> MatcherPass:
        if isinstance(pass_, type):
            pass_ = pass_()
        self._passes.append(pass_)
        return pass_

    def run_on_model(self, model: Any) -> bool:
        modified = False
        visited: set[int] = set()
        queue = list(model.get_ordered_ops())
        if self._backward:
            queue.reverse()
        while queue:
            node = queue.pop(0)
            if id(node) in visited:
                continue
            visited.add(id(node))
            for p in self._passes:
                p._new_nodes = []
                if p.apply(node):
                    modified = True
                    queue[:0] = [n for n in p._new_nodes if id(n) not in visited]
                    break  # the node may be gone; its replacement is visited through register_new_node
        if modified:
            model.validate_nodes_and_infer_types()
        return modified


class BackwardGraphRewrite(GraphRewrite):
    """A GraphRewrite that visits nodes from the results back to the inputs."""

    _backward = True
