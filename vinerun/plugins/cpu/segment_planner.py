"""Planning native segments (:mod:`.native_segment`): which runs of plan steps become segments, which values
share a buffer (a view and its source, a residual sum and its residual), and arena offsets by liveness.
"""

from __future__ import annotations

from typing import Any

from vinerun.plugins.cpu.kernels._native import NativeStep, ValueLayout
from vinerun.plugins.cpu.native_segment import ALIGN, Group, Segment, nbytes, permutation


def plan_segments(steps: list[Any], model_outputs: set[int], constants: dict[int, Any]) -> list[Any]:
    """``steps`` with each run of two or more natively runnable ones replaced by a :class:`Segment`.

    A step whose native form a segment cannot take (a residual sum into a value read later, an input read in two
    layouts) is left to Python, and the runs are planned again around it.
    """
    readers: dict[int, list[int]] = {}
    for i, st in enumerate(steps):
        for s in st.ins:
            readers.setdefault(s, []).append(i)
    excluded: set[int] = set()
    while True:
        items, bad = _plan(steps, readers, model_outputs, constants, excluded)
        if bad is None:
            return items
        excluded.add(bad)


def _plan(steps: list[Any], readers: dict[int, list[int]], model_outputs: set[int], constants: dict[int, Any],
          excluded: set[int]) -> tuple[list[Any], int | None]:
    items: list[Any] = []
    run: list[tuple[int, Any, NativeStep]] = []
    layouts: dict[int, ValueLayout] = {}  # values made in the current run

    def flush() -> int | None:
        if len(run) >= 2:
            seg = _segment(run, layouts, readers, model_outputs, constants)
            if isinstance(seg, int):
                return seg
            items.append(seg)
        else:
            items.extend(st for _, st, _ in run)
        run.clear()
        layouts.clear()
        return None

    for i, st in enumerate(steps):
        native = None
        if st.kernel.native is not None and i not in excluded:
            native = st.kernel.native([layouts.get(s) for s in st.ins])
            if native is not None and not _fits(st, native, layouts, readers):
                native = None
        if native is None:
            bad = flush()
            if bad is not None:
                return items, bad
            items.append(st)
            continue
        run.append((i, st, native))
        for b in native.buffers:
            if b.output:
                layouts[st.outs[b.index]] = b.layout
    return items, flush()


def _fits(st: Any, native: NativeStep, layouts: dict[int, ValueLayout], readers: dict[int, list[int]]) -> bool:
    """Whether the inputs made in the run have the layouts ``native`` reads, a sum adds into such a value of
    the output's layout, and every output something reads has a buffer."""
    for b in native.buffers:
        slot = st.ins[b.index] if not b.output else -1
        if slot >= 0 and slot in layouts and layouts[slot] != b.layout:
            return False
    described = {b.index for b in native.buffers if b.output}
    if any(s in readers for j, s in enumerate(st.outs) if j not in described):
        return False
    if native.accumulate is not None:
        out = next(b.layout for b in native.buffers if b.output and b.index == 0)
        if not same_bytes(layouts.get(st.ins[native.accumulate]), out):
            return False
    return True


def same_bytes(a: ValueLayout | None, b: ValueLayout) -> bool:
    """Whether two layouts describe the same bytes (shape, strides and element size: an int8 sum may write its u8
    result into the memory of an s8 residual)."""
    return a is not None and a[:2] == b[:2] and a[2].itemsize == b[2].itemsize


def _segment(run: list[tuple[int, Any, NativeStep]], layouts: dict[int, ValueLayout], readers: dict[int, list[int]],
             model_outputs: set[int], constants: dict[int, Any]) -> Segment | int:
    """The segment of ``run``, or the plan index of a step it cannot take."""
    last = run[-1][0]
    made = set(layouts)
    outs = [s for s in layouts if s in model_outputs or any(r > last for r in readers.get(s, ()))]
    groups: dict[int, Group] = {}
    all_layouts = dict(layouts)
    n_inputs = 0
    for i, st, native in run:
        for b in native.buffers:
            slot = (st.outs if b.output else st.ins)[b.index]
            if b.output:
                continue
            if slot not in made:  # made outside: a run points at it
                if slot in all_layouts and all_layouts[slot] != b.layout:
                    return i  # read in two layouts
                if permutation(b.layout) is None:
                    return i
                if slot not in groups:
                    groups[slot] = Group(slot, [slot], "input", runtime=n_inputs)
                    n_inputs += 1
                all_layouts[slot] = b.layout
        view = native.primitive is None
        joins = st.ins[0] if view else st.ins[native.accumulate] if native.accumulate is not None else None
        for k, b in enumerate(b for b in native.buffers if b.output):
            slot = st.outs[b.index]
            if joins is None or not (view or b.index == 0):
                groups[slot] = Group(slot, [slot])
                continue
            g = groups[joins]
            offset = g.offsets.get(joins, 0) + (native.offsets[k] if view and native.offsets else 0)
            if not view:
                reads_it = any(groups.get(st.ins[r.index]) is g for r in native.buffers if not r.output)
                if reads_it or offset or not _dies_here(g, i, readers, outs):
                    return i  # the sum would overwrite a value read later, or the convolution's own source
            g.members.append(slot)
            groups[slot] = g
            if offset:
                g.offsets[slot] = offset
    made_by = {s: i for i, st, _ in run for s in st.outs}
    n_fresh = n_inputs
    for g in {id(g): g for g in groups.values()}.values():
        handed = [m for m in g.members if m in outs]
        if not handed:
            continue
        if g.kind == "input":
            return made_by[handed[0]]  # a view of an input handed back: left to Python
        if permutation(all_layouts[g.root]) is None:
            return made_by[handed[0]]
        g.kind, g.runtime = "fresh", n_fresh
        n_fresh += 1
    arena = _place(run, groups, readers, last)
    return Segment([st for _, st, _ in run], [n for _, _, n in run], groups, all_layouts, outs, constants, arena)


def _dies_here(g: Group, i: int, readers: dict[int, list[int]], outs: list[int]) -> bool:
    """Whether nothing reads the buffer of ``g`` after step ``i`` (so a sum may write into it)."""
    if g.kind == "input" or any(m in outs for m in g.members):
        return False
    return all(r <= i for m in g.members for r in readers.get(m, ()))


def _place(run: list[tuple[int, Any, NativeStep]], groups: dict[int, Group], readers: dict[int, list[int]],
           last: int) -> int:
    """Arena offsets for the groups that live only inside the run, by first fit as values are made and die;
    returns the arena's size."""
    unique = {id(g): g for g in groups.values() if g.kind == "arena"}
    end_of = {k: max([r for m in g.members for r in readers.get(m, ()) if r <= last] or [0])
              for k, g in unique.items()}
    free: list[tuple[int, int]] = []  # (offset, size), sorted
    top = 0
    sizes: dict[int, int] = {}
    for i, st, native in run:
        for b in native.buffers:
            if not b.output:
                continue
            g = groups[st.outs[b.index]]
            if g.kind != "arena" or g.root != st.outs[b.index] or id(g) in sizes:
                continue
            size = -(-nbytes(b.layout) // ALIGN) * ALIGN
            sizes[id(g)] = size
            spot = next((k for k, (_, n) in enumerate(free) if n >= size), None)
            if spot is None:
                g.offset, top = top, top + size
            else:
                offset, n = free.pop(spot)
                g.offset = offset
                if n > size:
                    free.append((offset + size, n - size))
        for k, g in unique.items():
            if end_of[k] == i and k in sizes:
                free.append((g.offset, sizes[k]))
        free = _merged(free)
    return top


def _merged(free: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for offset, n in sorted(free):
        if out and out[-1][0] + out[-1][1] == offset:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((offset, n))
    return out
