"""Intra-op threads of one inference, adapted to what the machine gives right now.

A stream runs its kernels on ``max_threads`` OpenMP threads. GNU OpenMP parallel regions are fork-join:
every region waits for its slowest thread, so when another process takes a core, each of the hundreds of
regions of an inference waits for a descheduled thread to get a time slice back (measured on a 2-core
machine with one busy-loop process: BERT median 65-740 ms on 2 threads, 50-60 ms on 1; openvino's TBB
work-stealing does not have this cliff). :class:`ThreadGovernor` watches the wall time of each inference
and switches between ``max_threads`` and 1 thread when the other is faster, probing the other count from a
time budget. :func:`omp_threads` sets the count on the calling thread only (a sync ``infer`` from the main
thread runs there, not on a stream worker). ``VINERUN_CPU_GOVERNOR=0`` keeps every call on ``max_threads`` (to
tell the governor's choices from the kernels' scaling when measuring).
"""

from __future__ import annotations

import collections
import ctypes
import os
import statistics
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from vinerun.plugins.cpu.streams import _thread_local_setters

_local = threading.local()


def _ensure_initialised() -> None:
    """ATen sets a thread's OpenMP count on its first parallel op: let that happen before we set ours."""
    if not getattr(_local, "ready", False):
        torch.ones(1 << 15).add_(1)
        _local.ready = True


def set_thread_count(threads: int) -> None:
    """Set the OpenMP (and MKL) thread count of the calling thread only."""
    _ensure_initialised()
    omp, mkl = _thread_local_setters()
    if omp is None:
        torch.set_num_threads(threads)
        return
    omp(ctypes.c_int(threads))
    if mkl is not None:
        mkl(ctypes.c_int(threads))


@contextmanager
def omp_threads(threads: int) -> Iterator[None]:
    """Run the block with ``threads`` intra-op threads on this thread, then restore the previous count."""
    _ensure_initialised()
    before = torch.get_num_threads()
    if before == threads:
        yield
        return
    set_thread_count(threads)
    try:
        yield
    finally:
        set_thread_count(before)


class ThreadGovernor:
    """Picks ``max_threads`` or 1 thread per call from the recent wall times of each.

    Probing the other count costs a call at its speed (under load, a 2-thread call can take 1.5 s), so
    probes are paid from a time budget: the other count is tried once the current one has spent ``budget``
    times the other's last known call time (the budget doubles, up to ``max_budget``, while probes lose, so
    they cost at most ~1/``budget`` of the time), and after only one such call time when the current count's
    call time jumps (``slowdown`` times the other's), when the calling thread got the CPU for less than
    ``starved`` of a multi-thread call, or, on 1 thread, when the call time drops (below ``speedup`` times
    its recent median: the load went away). Without a hint, the first probe comes after ``budget`` calls.
    The policy is pure (``choose`` / ``record``), so it is testable with made-up times.

    >>> g = ThreadGovernor(2)
    >>> g.choose()
    2
    >>> for _ in range(3): g.record(2, 0.030)
    >>> g.record(2, 0.600)  # a core was taken: the next call tries 1 thread
    >>> g.choose()
    1
    """

    def __init__(self, max_threads: int, window: int = 5, budget: float = 8.0, max_budget: float = 32.0,
                 slowdown: float = 2.0, speedup: float = 0.7, margin: float = 0.9, starved: float = 0.5):
        self.max_threads = max(1, max_threads)
        self.current = self.max_threads
        self.base_budget, self.max_budget, self.budget = budget, max_budget, budget
        self.slowdown, self.speedup, self.margin, self.starved = slowdown, speedup, margin, starved
        self.times: dict[int, deque[float]] = {n: deque(maxlen=window) for n in {self.max_threads, 1}}
        self.best: dict[int, float] = {}
        self._spent = 0.0  # time of the current count's calls since the last probe
        self._probe_now = False
        self._trigger: float | None = None  # the slow call that asked for a probe
        self.fixed = os.environ.get("VINERUN_CPU_GOVERNOR", "1") == "0"
        #: calls made so far on each thread count (what benchmarks report next to the times)
        self.calls: collections.Counter[int] = collections.Counter()

    @property
    def other(self) -> int:
        return 1 if self.current == self.max_threads else self.max_threads

    def choose(self) -> int:
        """The thread count for the next call."""
        if self.max_threads == 1 or self.fixed:
            return self.max_threads
        other = self.times[self.other]
        # never tried: estimate the other count's call by the current one's (not earlier: a thread count's
        # first calls also pack its copy of the oneDNN weights)
        estimate = other[-1] if other else self._recent(self.current)
        # a hint (a jump in the current count's time) lowers the budget to one call of the other count
        if self._spent >= (1.0 if self._probe_now else self.budget) * estimate:
            return self.other
        return self.current

    def record(self, threads: int, seconds: float, cpu_seconds: float | None = None) -> None:
        """The wall time of a call made with ``threads`` threads (and the calling thread's CPU time in it)."""
        self.calls[threads] += 1
        if self.max_threads == 1 or threads not in self.times:
            return
        if threads == self.current:
            before = self._recent(threads) if len(self.times[threads]) >= 3 else None
            self._add(threads, seconds)
            self._spent += seconds
            self._probe_now = self._slowed_down(seconds) or self._starved(threads, seconds, cpu_seconds) or (
                threads == 1 and before is not None and seconds < self.speedup * before)
            self._trigger = seconds if self._probe_now else None
            return
        # a probe of the other count: switch to it when faster than the current one's recent calls (or than
        # the call that asked for the probe)
        ref = self._trigger if self._trigger is not None else self._recent(self.current)
        self._add(threads, seconds)
        self._probe_now, self._trigger, self._spent = False, None, 0.0
        if seconds < self.margin * ref:
            self.current = threads
            self.budget = self.base_budget
        else:
            self.budget = min(2 * self.budget, self.max_budget)

    def _add(self, threads: int, seconds: float) -> None:
        self.times[threads].append(seconds)
        self.best[threads] = min(seconds, self.best.get(threads, seconds))

    def _recent(self, threads: int) -> float:
        t = self.times[threads]
        return statistics.median(t) if t else float("inf")

    def _starved(self, threads: int, seconds: float, cpu_seconds: float | None) -> bool:
        """Several threads, and the calling one ran for less than ``starved`` of the call: it waited for a core
        or for a descheduled team thread (on an idle machine it computes or spins the whole call)."""
        return threads > 1 and cpu_seconds is not None and cpu_seconds < self.starved * seconds

    def _slowed_down(self, seconds: float) -> bool:
        """The current count just took far longer than the other's recent calls (or its own best)."""
        other = self.times[self.other]
        ref = statistics.median(other) if other else self.best[self.current]
        return seconds > self.slowdown * ref

    def run(self) -> _GovernedCall:
        """Time one call on the chosen thread count (set on the calling thread, restored after)."""
        return _GovernedCall(self)


class _GovernedCall:
    """One call under a :class:`ThreadGovernor` (a class, not a generator: it wraps every inference)."""

    __slots__ = ("_governor", "_threads", "_before", "_t0", "_c0")

    def __init__(self, governor: ThreadGovernor):
        self._governor = governor

    def __enter__(self) -> int:
        self._threads = threads = self._governor.choose()
        _ensure_initialised()
        self._before = torch.get_num_threads()
        if self._before != threads:
            set_thread_count(threads)
        self._t0, self._c0 = time.perf_counter(), time.thread_time()
        return threads

    def __exit__(self, exc_type: object, *exc: object) -> None:
        seconds, cpu = time.perf_counter() - self._t0, time.thread_time() - self._c0
        if self._before != self._threads:
            set_thread_count(self._before)
        if exc_type is None:
            self._governor.record(self._threads, seconds, cpu)
