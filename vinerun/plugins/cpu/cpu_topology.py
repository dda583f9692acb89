"""The logical CPUs this process may run on, grouped by physical core (hardware threads of one core together),
and the L2 cache per core, from Linux's sysfs; every CPU its own core where sysfs says nothing.

>>> usable_cpus(hyper_threading=False)   # one logical CPU per physical core  # doctest: +SKIP
[0, 1, 2, 3]
"""

from __future__ import annotations

import functools
import os

SYSFS = "/sys/devices/system/cpu"


def allowed_cpus() -> list[int]:
    """The logical CPUs of this process's affinity mask, in order."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def core_groups(cpus: list[int], root: str = SYSFS) -> list[list[int]]:
    """``cpus`` grouped by physical core (each group's CPUs are one core's hardware threads), in CPU order."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for cpu in cpus:
        try:
            key = tuple(parse_cpu_list(_read(root, f"cpu{cpu}", "topology", "thread_siblings_list"))) or (cpu,)
        except OSError:
            key = (cpu,)
        groups.setdefault(key, []).append(cpu)
    return list(groups.values())


def usable_cpus(hyper_threading: bool, root: str = SYSFS) -> tuple[list[int], bool]:
    """(the logical CPUs to run on, whether every core contributes two or more of them). Without hyper-threading
    one CPU per physical core (its first hardware thread)."""
    groups = core_groups(allowed_cpus(), root)
    if not hyper_threading:
        return [g[0] for g in groups], False
    return [c for g in groups for c in g], all(len(g) >= 2 for g in groups)


@functools.cache
def l2_per_core() -> float:
    """Bytes of L2 cache per core (the L2 of cpu0 divided among the CPUs sharing it); 1 MiB when unknown."""
    base = os.path.join(SYSFS, "cpu0", "cache")
    try:
        for index in sorted(os.listdir(base)):
            if _read(base, index, "level") == "2":
                sharing = len(parse_cpu_list(_read(base, index, "shared_cpu_list"))) or 1
                return _parse_size(_read(base, index, "size")) / sharing
    except OSError:
        pass
    return float(1 << 20)


def _read(*path: str) -> str:
    with open(os.path.join(*path), encoding="utf-8") as f:
        return f.read().strip()


def _parse_size(text: str) -> float:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return float(text[:-1]) * units[text[-1].upper()] if text and text[-1].upper() in units else float(text)


def parse_cpu_list(text: str) -> list[int]:
    """``"0-3,8,10-11"`` -> ``[0, 1, 2, 3, 8, 10, 11]``."""
    cpus: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus
