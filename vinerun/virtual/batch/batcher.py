"""Gathers single requests (jobs) into batches: one collector thread per compiled model.

A batch closes when ``size`` jobs are waiting, or ``timeout_s`` after its first job arrived; a full
batch goes to ``run_batch``, a partial one job by job to ``run_single`` (as OpenVINO's auto-batching
runs a timed-out partial batch unbatched). Jobs cancelled while waiting are answered at once and not run.

>>> batcher = Batcher(8, 1.0, run_batch=runner.run_batch, run_single=runner.run_single, name="CPU")
>>> batcher.put(Job([x], done=lambda outputs, error: print(outputs, error)))
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vinerun.errors import DeviceError

Done = Callable[[list[Any] | None, BaseException | None], None]


@dataclass(slots=True)
class Job:
    """One single inference waiting for a batch: its inputs, and whom to tell when it is done.

    >>> Job([x], done=lambda outputs, error: None).inputs[0] is x
    True
    """

    inputs: list[Any]
    done: Done
    cancelled: Callable[[], bool] = lambda: False
    arrival: float = field(default_factory=time.monotonic)
    #: profiling counters of the execution that ran it
    profile: list[Any] = field(default_factory=list)


class Batcher:
    """The collector: ``put`` never blocks; a daemon thread forms batches; ``close`` stops it.

    >>> batcher = Batcher(8, 1.0, run_batch, run_single)
    >>> batcher.put(job); batcher.close()
    """

    def __init__(self, size: int, timeout_s: float, run_batch: Callable[[list[Job]], None],
                 run_single: Callable[[Job], None], name: str = "BATCH"):
        self.size = size
        self.timeout_s = timeout_s
        self._run_batch = run_batch
        self._run_single = run_single
        self._name = name
        self._queue: deque[Job] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def put(self, job: Job) -> None:
        with self._cond:
            if self._closed:
                raise DeviceError(f"{self._name}: the compiled model was released; create a new one")
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=f"{self._name}-batcher", daemon=True)
                self._thread.start()
            self._queue.append(job)
            if len(self._queue) == 1 or len(self._queue) == self.size:
                self._cond.notify()  # the collector waits for a first job, then for a full batch: nothing between

    def withdraw(self, job: Job) -> bool:
        """Take a job out of the queue before it runs (a cancelled request); False if it was taken already."""
        with self._cond:
            try:
                self._queue.remove(job)
            except ValueError:
                return False
        job.done(None, None)
        return True

    def close(self) -> None:
        """Stop the collector; jobs still waiting fail with a DeviceError."""
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _next_jobs(self) -> list[Job] | None:
        """Wait for a full batch or the first job's timeout; None once closed."""
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            deadline = self._queue[0].arrival + self.timeout_s
            while len(self._queue) < self.size and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return [self._queue.popleft() for _ in range(min(self.size, len(self._queue)))]

    def _loop(self) -> None:
        while True:
            jobs = self._next_jobs()
            if jobs is None:
                break
            live = []
            for job in jobs:
                if job.cancelled():
                    job.done(None, None)
                else:
                    live.append(job)
            if len(live) == self.size:
                self._run_batch(live)
            else:
                for job in live:
                    self._run_single(job)
        with self._cond:
            left, self._queue = list(self._queue), deque()
        for job in left:
            job.done(None, DeviceError(f"{self._name}: the compiled model was released before the request ran"))
