"""Executors that run the stages of asynchronous requests.

``StreamsExecutor`` is a set of streams: one daemon worker thread per stream, all taking tasks
from one queue (any free stream runs the next task). ``on_thread_start(stream_index)`` runs first
in each worker: the device sets the thread's share of the cores there. Kernels release the GIL,
so N streams run N requests in parallel.

Shutdown never blocks: it posts one stop marker per worker and returns, so it is safe from a
finalizer and from a worker thread itself. At interpreter exit, tasks not started are dropped and
the running ones get a bounded time (``EXIT_GRACE_S``) to finish: a daemon thread still inside a
torch kernel while the interpreter tears down makes the C++ runtime abort the process.

>>> ex = StreamsExecutor(2, name="CPU")
>>> done = threading.Event()
>>> ex.submit(done.set)
>>> done.wait(5)
True
>>> ex.shutdown()
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger("vinerun")

Task = Callable[[], None]


class IExecutor(Protocol):
    """Runs tasks; ``submit`` never blocks."""

    def submit(self, task: Task) -> None: ...


class ImmediateExecutor:
    """Runs each task at once in the submitting thread (a stage that is cheap or must stay put)."""

    def submit(self, task: Task) -> None:
        task()


_STOP = object()
EXIT_GRACE_S = 60.0
_live: weakref.WeakSet[StreamsExecutor] = weakref.WeakSet()


class StreamsExecutor:
    """``num_streams`` daemon worker threads sharing one task queue; started on first ``submit``."""

    def __init__(self, num_streams: int = 1, name: str = "vinerun",
                 on_thread_start: Callable[[int], None] | None = None):
        if num_streams < 1:
            raise ValueError(f"StreamsExecutor needs at least one stream, got {num_streams}")
        self.num_streams = num_streams
        self.name = name
        self._on_thread_start = on_thread_start
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False
        _live.add(self)

    def submit(self, task: Task) -> None:
        if self._closed:
            raise RuntimeError(f"Executor {self.name} is shut down")
        if not self._threads:
            self._start()
        self._queue.put(task)

    def _start(self) -> None:
        with self._lock:
            if self._threads:
                return
            for i in range(self.num_streams):
                t = threading.Thread(target=self._work, args=(i,), name=f"{self.name}-stream-{i}", daemon=True)
                t.start()
                self._threads.append(t)

    def _work(self, index: int) -> None:
        if self._on_thread_start is not None:
            try:
                self._on_thread_start(index)
            except Exception:  # noqa: BLE001 - a failed thread setup must not kill the stream
                log.exception("%s stream %d: thread setup failed", self.name, index)
        while True:
            task = self._queue.get()
            if task is _STOP:
                return
            try:
                task()  # type: ignore[operator]
            except BaseException:  # noqa: BLE001 - tasks report their own errors; keep the stream alive
                log.exception("%s stream %d: task failed", self.name, index)
            del task

    def started(self) -> bool:
        """Whether the worker threads have been started (by a first ``submit``)."""
        return bool(self._threads)

    def in_worker(self) -> bool:
        """Whether the calling thread is one of this executor's streams."""
        return threading.current_thread() in self._threads

    def shutdown(self, drop_pending: bool = False) -> None:
        """Stop the workers after the tasks already queued (or dropping them); does not wait."""
        if self._closed:
            return
        self._closed = True
        if drop_pending:
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
        for _ in self._threads:
            self._queue.put(_STOP)

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))


@atexit.register
def _shutdown_at_exit() -> None:
    executors = list(_live)
    for ex in executors:
        ex.shutdown(drop_pending=True)
    deadline = time.monotonic() + EXIT_GRACE_S
    for ex in executors:
        ex.join(max(0.0, deadline - time.monotonic()))
