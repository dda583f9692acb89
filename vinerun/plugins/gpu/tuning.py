"""``TUNING_MODE`` / ``TUNING_FILE``: launch parameters of generated kernels chosen by measurement, written once
and reused (as clDNN tunes its OpenCL kernels into a cache file).

A generated Triton kernel has parameters that do not change its results, only its speed (the block of elements
a program handles, the warps per program). With ``TUNING_CREATE`` each new (kernel, size, type, device) is timed
with every candidate at its first launch and the fastest is added to the file; ``TUNING_USE_EXISTING`` reads the
file and times nothing; ``TUNING_RETUNE`` times everything again and rewrites the file; ``TUNING_DISABLED`` (the
default) takes the defaults.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

from vinerun.plugins.gpu.config import TuningMode

Params = dict[str, int]
_current: contextvars.ContextVar[TuningStore | None] = contextvars.ContextVar("vinerun_gpu_tuning", default=None)


class TuningStore:
    """The tuning results of one ``TUNING_FILE`` under one ``TUNING_MODE``."""

    def __init__(self, mode: TuningMode, path: str):
        self.mode, self.path = mode, path
        self._lock = threading.Lock()
        self.results: dict[str, Params] = {}
        if path and os.path.exists(path) and mode != TuningMode.TUNING_RETUNE:
            with open(path, encoding="utf-8") as f:
                self.results = json.load(f)
        self.measured = 0  #: how many kernels this store timed (tests, the device check)

    def choose(self, key: str, candidates: list[Params], time_of: Callable[[Params], float]) -> Params:
        """The parameters for ``key``: from the file, or the fastest candidate by ``time_of`` (seconds) when the
        mode tunes; the first candidate (the default) otherwise."""
        known = self.results.get(key)
        tunes = self.mode in (TuningMode.TUNING_CREATE, TuningMode.TUNING_RETUNE)
        if known is not None or not tunes:
            return known or candidates[0]
        best = min(candidates, key=time_of)
        with self._lock:
            self.results[key] = best
            self.measured += 1
            if self.path:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                with open(self.path, "w", encoding="utf-8") as f:
                    json.dump(self.results, f, indent=1, sort_keys=True)
        return best


def current() -> TuningStore | None:
    """The store of the compile in progress (kernels keep it for their first launches)."""
    return _current.get()


@contextlib.contextmanager
def tuning(mode: Any, path: str) -> Iterator[TuningStore | None]:
    """Kernels made inside take this store (none when the mode is ``TUNING_DISABLED``)."""
    store = TuningStore(mode, path) if mode != TuningMode.TUNING_DISABLED else None
    token = _current.set(store)
    try:
        yield store
    finally:
        _current.reset(token)
