"""The measuring loops of ``vinerun benchmark``: one request in a loop (sync), or a queue of
requests kept busy (async). Both stop when every given limit is reached, as benchmark_app does.

>>> limits = Limits(niter=3, duration_s=None)
>>> limits.running(2, 10.0), limits.running(3, 0.0)
(True, False)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vinerun.tools.progress import ProgressBar


@dataclass
class Limits:
    """Stop after ``niter`` iterations and ``duration_s`` seconds (each only if given)."""

    niter: int | None
    duration_s: float | None

    def running(self, iteration: int, elapsed_s: float) -> bool:
        return bool((self.niter and iteration < self.niter) or (self.duration_s and elapsed_s < self.duration_s))

    def progress_bar(self, stream: Any, enabled: bool | None) -> ProgressBar:
        if self.duration_s:
            return ProgressBar(self.duration_s, stream, enabled, unit="s", decimals=1)
        return ProgressBar(self.niter or 1, stream, enabled, unit="iterations")

    def done(self, iteration: int, elapsed_s: float) -> float:
        """Progress in the bar's unit (seconds when there is a time limit, else iterations)."""
        return elapsed_s if self.duration_s else float(iteration)


@dataclass
class LoopResult:
    latencies_ms: list[float]
    duration_s: float
    iterations: int


def run_sync(request: Any, input_sets: Sequence[list[Any]] | None, limits: Limits, bar: ProgressBar) -> LoopResult:
    """``request.infer()`` in a loop. ``input_sets`` None: inputs are already set on the request
    (inference only); else each iteration feeds the next set (inputs with several data shapes)."""
    latencies: list[float] = []
    iteration = 0
    start = time.perf_counter()
    elapsed = 0.0
    while limits.running(iteration, elapsed):
        if input_sets is None:
            request.infer()
        else:
            request.infer(input_sets[iteration % len(input_sets)])
        latencies.append(request.latency)
        iteration += 1
        elapsed = time.perf_counter() - start
        bar.update(limits.done(iteration, elapsed))
    bar.finish()
    return LoopResult(latencies, time.perf_counter() - start, iteration)


def run_async(queue: Any, input_sets: Sequence[list[Any]] | None, limits: Limits, bar: ProgressBar) -> LoopResult:
    """Keep every request of an ``AsyncInferQueue`` busy; latencies come from the completion callback.

    The number of iterations is rounded up to a multiple of the queue size, so every request runs
    equally often (benchmark_app does the same)."""
    latencies: list[float] = []
    lock = threading.Lock()

    def on_done(request: Any, userdata: Any) -> None:
        latency = request.latency or (time.perf_counter() - userdata) * 1e3
        with lock:
            latencies.append(latency)

    queue.set_callback(on_done)
    nireq = len(queue)
    iteration = 0
    start = time.perf_counter()
    elapsed = 0.0
    while limits.running(iteration, elapsed) or iteration % nireq:
        inputs = None if input_sets is None else input_sets[iteration % len(input_sets)]
        queue.start_async(inputs, time.perf_counter())
        iteration += 1
        elapsed = time.perf_counter() - start
        bar.update(limits.done(iteration, elapsed))
    queue.wait_all()
    duration = time.perf_counter() - start
    bar.finish()
    with lock:
        return LoopResult(list(latencies), duration, iteration)
