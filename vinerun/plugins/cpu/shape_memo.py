"""Shape arithmetic of a dynamic plan, computed once per set of shapes.

A model exported with dynamic axes computes shapes in the graph: ``ShapeOf`` of a tensor, then ``Gather``,
``Unsqueeze``, ``Concat``, ``Range``... into the targets of Reshapes, Broadcasts and Slices, position ids and
causal masks. On a plan for dynamic shapes they run every call: 385 of a GPT-2 decoding step's 526 steps
(~5 us of Python each), more time than its matrix products. Their values depend only on the shapes the
``ShapeOf`` steps see, so each group of them is computed once per distinct set of those shapes and looked up
after.

Planned on the step list (:func:`memoize_shape_steps`): a *shape step* is a ShapeOf, or a deterministic step
whose inputs are constants or other shape steps' values; none makes a model output. Each moves to right after
the step that makes the last tensor whose shape it depends on (it reads nothing made later, so the order stays
valid), and the shape steps placed there become one :class:`ShapeGroup`, keyed by the shapes of those tensors.
A group's values are kept until :data:`MAX_BYTES` of them are held, then its cache starts over. Nothing is
assumed about which ops have data-dependent shapes: the key is the shapes themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vinerun.plugins.cpu.native_segment import SegmentError

#: ops that are not functions of their inputs (state, randomness): never cached
UNCACHED = frozenset({"ReadValue", "Assign", "RandomUniform", "Multinomial", "If", "Loop", "TensorIterator"})
#: cached values held per group before its cache starts over (a causal mask of 1024 tokens is 4 MB)
MAX_BYTES = 32 << 20
#: fewer shape steps than this: planning a group costs more than it saves
MIN_STEPS = 8


class ShapeGroup:
    """Shape steps run as one: ``self(values)`` takes the values of :attr:`ins` (the tensors whose shapes the
    group's ShapeOf steps read first, then every other value it reads from outside) and returns those of
    :attr:`outs` (the values read after it), from the cache when those shapes are the same as a call before."""

    def __init__(self, steps: list[Any], n_sources: int, ins: list[int], outs: list[int], constants: dict[int, Any]):
        self.steps, self.ins, self.outs = steps, ins, outs
        self.free: list[int] = []
        self.node = steps[0].node
        self._n_sources = n_sources
        self._constants = constants
        self._cache: dict[tuple, list[Any]] = {}
        self._bytes = 0

    def __call__(self, inputs: list[Any]) -> list[Any]:
        key = tuple(getattr(v, "shape", None) for v in inputs[:self._n_sources])
        found = self._cache.get(key)
        if found is None:
            found = self._compute(inputs)
            size = sum(getattr(v, "nbytes", 0) for v in found)
            if self._bytes + size > MAX_BYTES:
                self._cache.clear()
                self._bytes = 0
            self._cache[key] = found
            self._bytes += size
        return found

    def _compute(self, inputs: list[Any]) -> list[Any]:
        local: dict[int, Any] = dict(zip(self.ins, inputs, strict=True))
        for step in self.steps:
            args = [None if s < 0 else local[s] if s in local else self._constants[s] for s in step.ins]
            try:
                results = step.kernel.fn(args)
            except Exception as e:  # noqa: BLE001 - the plan names the node that failed
                raise SegmentError(step.node, e) from e
            for s, v in zip(step.outs, results, strict=False):
                local[s] = v
        return [_frozen(local[s]) for s in self.outs]


def _frozen(value: Any) -> Any:
    """A cached value, read-only: a kernel that wrote into it would change every later call's value."""
    if isinstance(value, np.ndarray):
        value = value if value.flags.owndata else value.copy()
        value.flags.writeable = False
    return value


def memoize_shape_steps(steps: list[Any], constants: dict[int, Any], output_slots: set[int]) -> list[Any]:
    """``steps`` (a plan's items: steps, or native segments, never grouped) with the shape steps taken out and
    put, as one :class:`ShapeGroup`, right after the step that makes the last tensor whose shape they read;
    unchanged when there are fewer than :data:`MIN_STEPS` shape steps."""
    made_at: dict[int, int] = {}  # slot -> index of the item that makes it (inputs and constants: absent)
    sources_of: dict[int, frozenset[int]] = {s: frozenset() for s in constants}  # shape value -> tensors read
    trigger: dict[int, int] = {}  # shape step index -> index of the item after which it runs (-1: first)
    for i, st in enumerate(steps):
        shape_step = (hasattr(st, "kernel") and st.node.type_name not in UNCACHED
                      and not any(s in output_slots for s in st.outs))
        if shape_step and st.node.type_name == "ShapeOf" and st.ins[0] >= 0:
            needed = frozenset(st.ins[:1])
        elif shape_step and all(s in sources_of for s in st.ins if s >= 0):
            needed = frozenset().union(*(sources_of[s] for s in st.ins if s >= 0))
        else:
            needed = None
        if needed:  # (constants only: nothing to key on, folding left it for a reason)
            for s in st.outs:
                sources_of[s] = needed
            trigger[i] = max(made_at.get(s, -1) for s in needed)
        for s in st.outs:
            made_at[s] = i
    if len(trigger) < MIN_STEPS:
        return steps
    grouped: dict[int, list[int]] = {}
    for i, t in trigger.items():
        grouped.setdefault(t, []).append(i)
    read_by: dict[int, set[int]] = {}
    for i, st in enumerate(steps):
        for s in st.ins:
            read_by.setdefault(s, set()).add(i)
    order: list[Any] = []
    for i in range(-1, len(steps)):
        if i >= 0 and i not in trigger:
            order.append(steps[i])
        members = grouped.get(i)
        if members:
            order.append(_group([steps[k] for k in members], set(members), read_by, sources_of, constants))
    return order


def _group(members: list[Any], indices: set[int], read_by: dict[int, set[int]],
           sources_of: dict[int, frozenset[int]], constants: dict[int, Any]) -> ShapeGroup:
    """The group of ``members``: it reads the tensors their shapes come from first, and hands out what steps
    outside it read (no shape step makes a model output)."""
    made = {s for st in members for s in st.outs}
    sources = sorted(frozenset().union(*(sources_of[s] for st in members for s in st.outs)))
    outside = sorted({s for st in members for s in st.ins if s >= 0 and s not in made and s not in constants})
    ins = sources + [s for s in outside if s not in sources]
    outs = [s for s in sorted(made) if read_by.get(s, set()) - indices]
    return ShapeGroup(members, len(sources), ins, outs, constants)
