"""Split nodes with device affinities into as few subgraphs as the affinities allow, with no cycle
between subgraphs.

Nodes are visited producers first. A node joins the subgraph of a producer with its device when
that makes no cycle (a path from the subgraph through another subgraph back into it), and joins
together every such producer subgraph it can. A second pass merges remaining subgraphs of one
device when no path between them leaves them (e.g. two branches of a diamond on one device).

Example: ``a(CPU) -> b(GNA) -> d(CPU)`` and ``a -> c(CPU) -> d`` gives three subgraphs,
``{a, c}``, ``{b}``, ``{d}``: putting ``d`` with ``{a, c}`` would need ``b`` both after and before it.

>>> groups = partition(order, affinity, producers, must_join)
>>> [(g.device, [n.friendly_name for n in g.nodes]) for g in groups]
[('CPU', ['a', 'c']), ('GNA', ['b']), ('CPU', ['d'])]
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from vinerun.errors import NotSupportedError

N = TypeVar("N", bound=Hashable)


@dataclass
class Subgraph(Generic[N]):
    """Nodes (in the order they were given) that one device runs.

    >>> Subgraph("CPU", [a, c]).device
    'CPU'
    """

    device: str
    nodes: list[N] = field(default_factory=list)


class _Groups(Generic[N]):
    """Subgraphs under construction and the edges between them."""

    def __init__(self) -> None:
        self.members: dict[int, list[N]] = {}
        self.device: dict[int, str] = {}
        self.succ: dict[int, set[int]] = {}
        self.of: dict[N, int] = {}
        self._next = 0

    def new(self, device: str) -> int:
        g = self._next
        self._next += 1
        self.members[g], self.device[g], self.succ[g] = [], device, set()
        return g

    def closes_cycle(self, group: set[int], into: set[int]) -> bool:
        """Whether treating ``group`` as one subgraph, fed by ``into``, makes a cycle: some path leaves
        ``group`` and comes back to it, or reaches a subgraph of ``into``."""
        stop = group | into
        seen: set[int] = set()
        stack = [s for g in group for s in self.succ[g] if s not in group]
        while stack:
            g = stack.pop()
            if g in stop:
                return True
            if g in seen:
                continue
            seen.add(g)
            stack.extend(self.succ[g])
        return False

    def merge(self, group: set[int]) -> int:
        keep = min(group)
        for g in sorted(group - {keep}):
            self.members[keep].extend(self.members.pop(g))
            self.succ[keep] |= self.succ.pop(g)
            del self.device[g]
        self.succ[keep] -= group
        for g, succ in self.succ.items():
            if succ & group:
                succ -= group
                if g != keep:
                    succ.add(keep)
        for n in self.members[keep]:
            self.of[n] = keep
        return keep

    def add(self, node: N, g: int, producers: set[int]) -> None:
        self.members[g].append(node)
        self.of[node] = g
        for p in producers - {g}:
            self.succ[p].add(g)

    def ordered(self) -> list[int]:
        """Subgraph ids, producers first (Kahn's algorithm, ties by id)."""
        indegree = {g: 0 for g in self.members}
        for succ in self.succ.values():
            for s in succ:
                indegree[s] += 1
        ready = sorted(g for g, d in indegree.items() if d == 0)
        out = []
        while ready:
            g = ready.pop(0)
            out.append(g)
            for s in sorted(self.succ[g]):
                indegree[s] -= 1
                if indegree[s] == 0:
                    ready.append(s)
            ready.sort()
        return out


def partition(order: list[N], affinity: dict[N, str], producers: Callable[[N], list[N]],
              must_join: Callable[[N], N | None] = lambda n: None) -> list[Subgraph[N]]:
    """Subgraphs of ``order`` (every node in ``affinity``, producers before consumers), in an order
    where each subgraph comes after those it reads from.

    ``producers(n)``: the nodes of ``order`` that ``n`` reads. ``must_join(n)``: a node ``n`` must share
    a subgraph with (an Assign and its ReadValue, both ways), or None.
    """
    groups: _Groups[N] = _Groups()
    for n in order:
        device = affinity[n]
        fed_by = {groups.of[p] for p in producers(n)}
        partner = must_join(n)
        if partner is not None and partner not in groups.of:
            partner = None  # placed later: the partner joins this node's subgraph then
        if partner is not None:
            candidates = [groups.of[partner]]
        else:
            candidates = list(dict.fromkeys(groups.of[p] for p in producers(n)
                                            if groups.device[groups.of[p]] == device))
        chosen = next((g for g in candidates if not groups.closes_cycle({g}, fed_by - {g})), None)
        if chosen is None and partner is not None:
            raise NotSupportedError(
                f"HETERO: '{getattr(n, 'friendly_name', n)}' cannot run in the subgraph of "
                f"'{getattr(partner, 'friendly_name', partner)}' (a ReadValue and the Assign of one variable) "
                "without a cycle between subgraphs; "
                "pin the nodes between them to one device with rt_info['affinity']")
        if chosen is None:
            chosen = groups.new(device)
        else:
            for g in candidates:
                if g == chosen or g not in groups.members:  # merged already
                    continue
                fed_by = {groups.of[p] for p in producers(n)}
                if not groups.closes_cycle({chosen, g}, fed_by - {chosen, g}):
                    chosen = groups.merge({chosen, g})
        groups.add(n, chosen, {groups.of[p] for p in producers(n)})
    _merge_same_device(groups)
    position = {n: i for i, n in enumerate(order)}
    out = []
    for g in groups.ordered():
        nodes = sorted(groups.members[g], key=position.__getitem__)
        out.append(Subgraph(groups.device[g], nodes))
    return out


def _merge_same_device(groups: _Groups[N]) -> None:
    """Merge subgraphs of one device while a merge makes no cycle."""
    changed = True
    while changed:
        changed = False
        ids = sorted(groups.members)
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                if groups.device[a] == groups.device[b] and not groups.closes_cycle({a, b}, set()):
                    groups.merge({a, b})
                    changed = True
                    break
            if changed:
                break
