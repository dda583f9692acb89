"""The logical CPUs this process may run on, grouped by physical core (hardware threads of one core together),
from Linux's sysfs; every CPU its own core where sysfs says nothing.

>>> usable_cpus(hyper_threading=False)   # one logical CPU per physical core  # doctest: +SKIP
[0, 1, 2, 3]
"""

from __future__ import annotations

import os

from vinerun.plugins.cpu.mem_pressure import parse_cpu_list

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
            with open(os.path.join(root, f"cpu{cpu}", "topology", "thread_siblings_list"), encoding="utf-8") as f:
                key = tuple(parse_cpu_list(f.read().strip())) or (cpu,)
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
