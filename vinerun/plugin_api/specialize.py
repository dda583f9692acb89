"""Plans specialized to the input shapes calls bring, for models with dynamic inputs.

A model compiled with dynamic dimensions runs kernels that find their shapes per call: no prepacked
primitives of a known size, no native segments (those need static shapes), shape arithmetic evaluated
every time. A stream of calls of one shape (a speech model's fixed chunk, a server's usual batch) pays
that for nothing. Here a shape seen :data:`SIGHTINGS` times within the last :data:`WINDOW` calls is compiled
again with those input shapes (reshape, constant folding of the now-static shape arithmetic, the fusions, a
static plan), and calls of that shape then run the specialized plan. A shape that comes back only now and then
(a decoder's KV cache growing by one per step, restarted every 64 steps) is not repeating: compiling a plan for
each would cost more than it ever saves. At most :data:`LIMIT` shapes per compiled model get a plan (each holds
its own prepacked weights). ``CPU_RUNTIME_CACHE_CAPACITY=0`` (OpenVINO's key for the CPU's shape-keyed caches)
turns this off.

A plan is also worth its compile only where it saves more than the compile costs: where the plugin gives the
compile's expected ``cost`` (seconds; the CPU's: its own compile of the model, then the last specialization's),
a shape's calls must first have spent ``cost / saving`` on the dynamic plan, ``saving`` being the share of a
call's time the last plan saved (1 before any plan: the rent-or-buy rule, at most twice the best choice made in
hindsight). Each call reports its time through :meth:`SpecializedPlans.ran`. PP-OCR's recogniser fed text lines
of a few recurring widths compiled a plan (0.3-0.5 s) at each width's second call, to save 4 ms of 16 a call.

A plan is timed on its first :data:`TIMED` calls; one that runs slower than the dynamic plan did (by more than
:data:`SLOWER`: a kernel that a static shape sends down a worse path, as oneDNN's reduction once did for a
spectrogram) is dropped, and its shape stays with the dynamic plan.

The call that makes a shape's plan due compiles it, then runs on it (like OpenVINO's first inference at a new
shape, that call is slow); calls on other threads meanwhile run the dynamic plan. Compiling on a background
thread instead looked free but was not: the compile holds the GIL for milliseconds at a time, and every kernel
call of a running inference waits for it to be handed back (GPT-2 decoding steps 1.5 ms -> 120 ms for as long as
a background compile ran).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

#: shapes that get a specialized plan, per compiled model
LIMIT = 4
#: calls of one shape before its plan is compiled (a shape seen once does not take a place)
SIGHTINGS = 2
#: the recent calls (without a plan) that the sightings are counted in
WINDOW = 16
#: calls on a new plan timed to tell what it saves
TIMED = 8
#: a plan whose timed calls take longer than this times the dynamic plan's is dropped
SLOWER = 1.1

Shapes = tuple[tuple[int, ...] | None, ...]
_log = logging.getLogger(__name__)


def call_shapes(inputs: list[Any]) -> Shapes:
    """The key of a call: each input's shape (None for an input without one)."""
    return tuple(x.shape if type(x) is np.ndarray else getattr(x, "shape", None) for x in inputs)


class SpecializedPlans:
    """Plans built by ``build(shapes)`` for the input shapes calls bring.

    :meth:`get` returns the plan for a call's shapes: one compiled earlier, one it compiles now (the shape just
    repeated), or None (the caller runs its dynamic plan). A shape whose build fails (the shapes contradict the
    model) is not tried again.
    """

    def __init__(self, build: Callable[[Shapes], Any], limit: int = LIMIT, sightings: int = SIGHTINGS,
                 cost: float = 0.0):
        self._build, self._limit, self._sightings = build, limit, sightings
        self._cost = cost  # seconds a build is expected to take (0: build at the sightings alone)
        self._plans: dict[Shapes, Any] = {}
        self._recent: deque[Shapes] = deque(maxlen=WINDOW)
        self._spent: dict[Shapes, list[float]] = {}  # [seconds, calls, first call's] on the dynamic plan, per shape
        self._timed: dict[Shapes, list[float]] = {}  # the same on its plan, for its first TIMED calls
        self._saving = 1.0  # the share of a call's time the last plan saved
        self._started: dict[Shapes, threading.Event] = {}  # set once the plan is in (or its build failed)
        self._failed: set[Shapes] = set()
        self._lock = threading.Lock()

    def get(self, inputs: list[Any]) -> Any | None:
        shapes = call_shapes(inputs)
        plan = self._plans.get(shapes)
        if plan is not None or shapes in self._started or None in shapes:
            return plan
        with self._lock:
            if shapes in self._started or shapes in self._failed or len(self._started) >= self._limit:
                return None
            self._recent.append(shapes)
            spent = self._spent.get(shapes, (0.0, 0))[0]
            if self._recent.count(shapes) < self._sightings or spent * self._saving < self._cost:
                return None
            done = self._started[shapes] = threading.Event()
        try:
            return self._compile(shapes)
        finally:
            done.set()

    def ran(self, inputs: list[Any], seconds: float, specialized: bool = False) -> None:
        """A call with ``inputs`` ran ``seconds`` on the dynamic plan (counted toward its shape's compile), or on
        its shape's plan (``specialized``: its first calls tell what a plan saves)."""
        if not self._cost or not specialized and len(self._started) >= self._limit:
            return  # no compile to pay for, or no place left for another plan
        shapes = call_shapes(inputs)
        if specialized and self._timed.get(shapes, (0.0, 0))[1] >= TIMED:
            return  # timed already: a plan's calls take no lock
        with self._lock:
            if not specialized:
                spent = self._spent.pop(shapes, [0.0, 0, seconds])  # re-inserted: the dict keeps the latest last
                self._spent[shapes] = [spent[0] + seconds, spent[1] + 1, spent[2]]
                if len(self._spent) > 4 * WINDOW:
                    del self._spent[next(iter(self._spent))]
                return
            timed = self._timed.setdefault(shapes, [0.0, 0])
            before = self._spent.get(shapes)
            if timed[1] >= TIMED or before is None or before[1] < 2:
                return
            timed[0], timed[1] = timed[0] + seconds, timed[1] + 1
            if timed[1] == TIMED:  # a call's time on the plan against its time on the dynamic plan (the first
                dynamic = (before[0] - before[2]) / (before[1] - 1)  # call left out: it also made kernels)
                if timed[0] / TIMED > SLOWER * dynamic:
                    _log.debug("the plan for input shapes %s is slower than the dynamic plan (%.3g s against "
                               "%.3g s a call): dropped", shapes, timed[0] / TIMED, dynamic)
                    self._plans.pop(shapes, None)  # its place stays taken: the shape is not compiled again
                    return
                self._saving = min(1.0, max(0.02, 1.0 - timed[0] / TIMED / dynamic))

    def _compile(self, shapes: Shapes) -> Any | None:
        start = time.perf_counter()
        try:
            plan = self._build(shapes)
        except Exception as e:  # noqa: BLE001 - the dynamic plan keeps serving these shapes
            _log.debug("no specialized plan for input shapes %s: %s", shapes, e)
            with self._lock:
                self._failed.add(shapes)
                del self._started[shapes]  # its place goes to another shape
            return None
        if self._cost:
            self._cost = time.perf_counter() - start  # the next shape's estimate
        self._plans[shapes] = plan
        return plan

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the compilations other threads are running (tests, benchmarks that want the steady state)."""
        for done in list(self._started.values()):
            done.wait(timeout)

    def ready(self) -> list[Shapes]:
        """The input shapes that have a plan."""
        return list(self._plans)
