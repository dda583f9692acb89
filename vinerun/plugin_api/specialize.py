"""Plans specialized to the input shapes calls bring, for models with dynamic inputs.

A model compiled with dynamic dimensions runs kernels that find their shapes per call: no prepacked
primitives of a known size, no native segments (those need static shapes), shape arithmetic evaluated
every time. A stream of calls of one shape (a speech model's fixed chunk, a server's usual batch) pays
that for nothing. Here a shape seen :data:`SIGHTINGS` times is compiled again with those input shapes
(reshape, constant folding of the now-static shape arithmetic, the fusions, a static plan) on a
background thread, while the dynamic plan keeps serving; calls of that shape then run the specialized
plan. At most :data:`LIMIT` shapes per compiled model get a plan (each holds its own prepacked weights).
``CPU_RUNTIME_CACHE_CAPACITY=0`` (OpenVINO's key for the CPU's shape-keyed caches) turns this off.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

#: shapes that get a specialized plan, per compiled model
LIMIT = 4
#: calls of one shape before its plan is compiled (a shape seen once does not take a place)
SIGHTINGS = 2
#: distinct shapes counted before the counts start over (a stream of ever-new shapes)
MAX_COUNTED = 256

Shapes = tuple[tuple[int, ...] | None, ...]
_log = logging.getLogger(__name__)


def call_shapes(inputs: list[Any]) -> Shapes:
    """The key of a call: each input's shape (None for an input without one)."""
    return tuple(x.shape if type(x) is np.ndarray else getattr(x, "shape", None) for x in inputs)


class SpecializedPlans:
    """Plans built by ``build(shapes)`` for the input shapes calls bring, compiled in the background.

    :meth:`get` returns the plan for a call's shapes once it is ready, else None (the caller runs its
    dynamic plan). A shape whose build fails (the shapes contradict the model) is not tried again.
    """

    def __init__(self, build: Callable[[Shapes], Any], limit: int = LIMIT, sightings: int = SIGHTINGS):
        self._build, self._limit, self._sightings = build, limit, sightings
        self._plans: dict[Shapes, Any] = {}
        self._seen: dict[Shapes, int] = {}
        self._started: dict[Shapes, threading.Thread] = {}
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
            if len(self._seen) >= MAX_COUNTED:
                self._seen.clear()
            self._seen[shapes] = self._seen.get(shapes, 0) + 1
            if self._seen[shapes] < self._sightings:
                return None
            # not a daemon: the interpreter waits for it at exit (a daemon thread still packing weights in
            # oneDNN while Python finalizes crashes the process)
            worker = threading.Thread(target=self._compile, args=(shapes,), daemon=False,
                                      name=f"vinerun-specialize-{len(self._started)}")
            self._started[shapes] = worker
        worker.start()
        return None

    def _compile(self, shapes: Shapes) -> None:
        try:
            plan = self._build(shapes)
        except Exception as e:  # noqa: BLE001 - the dynamic plan keeps serving these shapes
            _log.debug("no specialized plan for input shapes %s: %s", shapes, e)
            with self._lock:
                self._failed.add(shapes)
                del self._started[shapes]  # its place goes to another shape
            return
        self._plans[shapes] = plan

    def wait(self, timeout: float | None = None) -> None:
        """Wait for the compilations started so far (tests, benchmarks that want the steady state)."""
        for worker in list(self._started.values()):
            worker.join(timeout)

    def ready(self) -> list[Shapes]:
        """The input shapes that have a plan."""
        return list(self._plans)
