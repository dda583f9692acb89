"""Dead-code elimination: forget nodes that no result or sink depends on.

A model is what its Results and sinks reach, so dead nodes never run; but they stay attached to
the outputs they read (``Output.get_target_inputs`` lists them), which misleads passes that count
consumers (a fusion that needs a single consumer, for one). This pass detaches them, and does the
same inside the bodies of control-flow ops.
"""

from __future__ import annotations

from vinerun.ir.model import Model
from vinerun.ir.node import Node
from vinerun.transformations.pass_infra import InPlacePass, PassResult, reachable


def _dead_consumers(live: list[Node]) -> list[Node]:
    alive = {id(n) for n in live}
    dead: dict[int, Node] = {}
    stack = [c for n in live for d in n._outputs for c, _ in d.consumers if id(c) not in alive]
    while stack:
        node = stack.pop()
        if id(node) in dead:
            continue
        dead[id(node)] = node
        stack += [c for d in node._outputs for c, _ in d.consumers if id(c) not in alive and id(c) not in dead]
    return list(dead.values())


def eliminate_dead_code(model: Model) -> bool:
    """Detach every node no root of ``model`` (or of its bodies) depends on; returns whether any was."""
    live = reachable(model)
    dead = _dead_consumers(live)
    for node in dead:
        node.detach()
    modified = bool(dead)
    for node in live:
        for body in node.subgraphs():
            modified = eliminate_dead_code(body) or modified
    return modified


class DeadCodeElimination(InPlacePass):
    """Detach nodes that no Result or sink reaches, so consumer lists show live users only.

    >>> DeadCodeElimination()(model).modified
    False
    """

    def call(self, model: Model) -> PassResult:
        return PassResult(model, eliminate_dead_code(model))

    def ensures(self, model: Model) -> None:
        left = _dead_consumers(reachable(model))
        if left:
            raise AssertionError(f"dead node '{left[0].friendly_name}' is still a consumer of a live output")
