"""Streams on the CPU: how many, with how many threads each, which CPUs they run on, and the torch setup of a
stream thread.

A stream is one worker thread with its own share of the cores. Rules (OpenVINO's): ``LATENCY`` -> 1 stream with
every core (one hardware thread per physical core unless ``ENABLE_HYPER_THREADING`` is set); ``THROUGHPUT`` /
``CUMULATIVE_THROUGHPUT`` -> every logical CPU, in streams of the threads the model's memory pressure calls for
(:mod:`.mem_pressure`: 1 for compute-bound models, 2, else 4 / 5 / 3 whichever divides the CPUs), with at least
as many streams as threads per stream; ``NUM_STREAMS`` set explicitly (a count, or ``AUTO``) overrides the hint;
``INFERENCE_NUM_THREADS`` caps the threads used in all; ``PERFORMANCE_HINT_NUM_REQUESTS`` caps the streams and
requests of the throughput hints. ``ENABLE_CPU_PINNING`` pins each stream thread (and the OpenMP team it starts) to
its own CPUs. ``OPTIMAL_NUMBER_OF_INFER_REQUESTS`` = streams, twice that under the throughput hints (OpenVINO says
streams): a stream whose next job is already queued does not idle while Python hands back the last one and starts
the next (measured on 2 cores, 2 streams: MobileNetV2 f32 214-225 -> 229-243 FPS, bf16 350-356 -> 380-400; BERT
unchanged).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from vinerun.plugin_api.executors import StreamsExecutor, Task
from vinerun.plugin_api.property_table import PropertyValues
from vinerun.plugins.cpu.mem_pressure import default_threads_per_stream
from vinerun.properties.hint import PerformanceMode


@dataclass(frozen=True)
class StreamsConfig:
    """The resolved stream layout of a compiled model; ``cpus``: the logical CPUs its streams use, in the order
    streams take them; ``pinned``: each stream thread is bound to its share of them."""

    num_streams: int
    threads_per_stream: int
    num_requests: int
    cpus: tuple[int, ...] = ()
    pinned: bool = False

    @property
    def num_threads(self) -> int:
        return self.num_streams * self.threads_per_stream

    def stream_cpus(self, index: int) -> list[int]:
        """The CPUs of stream ``index`` (wrapping around when streams outnumber CPU shares)."""
        if not self.cpus:
            return []
        n = self.threads_per_stream
        start = (index * n) % len(self.cpus)
        return [self.cpus[(start + k) % len(self.cpus)] for k in range(n)]


def throughput_threads_per_stream(cpus: int, prefer: int = 0) -> int:
    """Threads per THROUGHPUT stream on ``cpus`` CPUs for a model preferring ``prefer`` (0: no preference: 4, 5
    or 3, whichever divides ``cpus``, lowered until there are at least as many streams as threads per stream)."""
    if prefer > 0:
        return prefer if prefer <= cpus else max(1, cpus // 2)
    threads = min(default_threads_per_stream(cpus), cpus)
    while threads > 1 and cpus // threads < threads:
        threads -= 1
    return threads


def resolve_streams(values: PropertyValues, cores: int, prefer: int = 0, cpus: tuple[int, ...] = (),
                    pinned: bool = False) -> StreamsConfig:
    """Streams, threads per stream and optimal requests for a configuration on ``cores`` CPUs, for a model whose
    memory pressure prefers ``prefer`` threads per THROUGHPUT stream (0: none); ``cpus`` / ``pinned`` are kept
    for the executor (see :class:`StreamsConfig`)."""
    threads = values.get("INFERENCE_NUM_THREADS") or cores
    threads = max(1, min(threads, cores))
    hint = values.get("PERFORMANCE_HINT")
    requested = int(values.get("NUM_STREAMS"))
    cap = values.get("PERFORMANCE_HINT_NUM_REQUESTS")
    if values.is_set("NUM_STREAMS") and requested > 0:
        streams = min(requested, threads)
    elif (values.is_set("NUM_STREAMS") and requested < 0) or hint != PerformanceMode.LATENCY:
        streams = max(1, -(-threads // throughput_threads_per_stream(threads, prefer)))
        if requested == -2:  # NUMA: one stream per NUMA node; vinerun sees one node
            streams = 1
        if cap and hint != PerformanceMode.LATENCY:
            streams = min(streams, cap)
    else:
        streams = 1
    per_stream = max(1, threads // streams)
    requests = streams if hint == PerformanceMode.LATENCY else 2 * streams
    requests = min(requests, cap) if cap else requests
    return StreamsConfig(streams, per_stream, max(1, requests), tuple(cpus), pinned and bool(cpus))


@functools.cache
def _thread_local_setters() -> tuple[Callable[[int], Any] | None, Callable[[int], Any] | None]:
    """``omp_set_num_threads`` of the OpenMP runtime torch loaded, and MKL's thread-local setter."""
    omp = mkl = None
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        return None, None
    for path in sorted(paths):
        name = os.path.basename(path)
        try:
            if name.startswith(("libgomp", "libiomp", "libomp")) and omp is None:
                omp = ctypes.CDLL(path).omp_set_num_threads
            elif name.startswith("libtorch_cpu") and mkl is None:
                mkl = ctypes.CDLL(path).MKL_Set_Num_Threads_Local  # C interface: takes an int
        except (OSError, AttributeError):
            continue
    return omp, mkl


def init_stream_thread(threads: int) -> None:
    """Give the calling (stream) thread ``threads`` intra-op threads, without touching other threads.

    ATen's OpenMP backend reads the thread count per OS thread (the OpenMP ``nthreads`` ICV) and sets
    it on a thread's first parallel op from a process-wide value that ``torch.set_num_threads`` also
    changes. So: run one parallel op (the lazy init happens now), then set only this thread's ICV
    with the OpenMP runtime's ``omp_set_num_threads`` (and MKL's thread-local count). Other threads,
    the caller's included, keep theirs. Without an OpenMP runtime found, fall back to
    ``torch.set_num_threads`` (process-wide for threads not started yet).
    """
    torch.ones(1 << 15).add_(1)
    omp, mkl = _thread_local_setters()
    if omp is None:
        torch.set_num_threads(threads)
        return
    omp(ctypes.c_int(threads))
    if mkl is not None:
        mkl(ctypes.c_int(threads))


_shared: dict[tuple[int, int, tuple[int, ...]], StreamsExecutor] = {}
_shared_lock = threading.Lock()
_local = threading.local()  # ``shared`` is set on the shared streams' threads


class SharedStreams:
    """A compiled model's view of streams it shares with other compiled models: shutting the view down leaves
    the streams running for the others."""

    def __init__(self, executor: StreamsExecutor):
        self.executor = executor

    def submit(self, task: Task) -> None:
        self.executor.submit(task)

    def started(self) -> bool:
        """Whether the stream threads run (and so hold their OpenMP teams)."""
        return self.executor.started()

    def call(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` run on one of the streams (inline when the caller is one), its result or its exception.

        A sync inference from a thread other than the main one comes here, and one from the main thread once
        the streams run: a thread pool calling ``infer`` (as web frameworks do) would otherwise give every
        pool thread its own OpenMP team (measured on 2 cores, MobileNetV2 from a 4-thread pool one call at a
        time: 8.1 ms against 4.7 from the main thread), and one sync call on the main thread beside async
        requests would slow them all from then on. The hand-over costs ~75 us (a 1x4 ReLU model: 21 us on the
        main thread, 97 us handed over).
        """
        if getattr(_local, "shared", False):
            return fn()
        done = threading.Event()
        outcome: list[Any] = []

        def task() -> None:
            try:
                outcome.append((True, fn()))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                outcome.append((False, e))
            finally:
                done.set()

        self.executor.submit(task)
        done.wait()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    def shutdown(self, drop_pending: bool = False) -> None:
        """Nothing to stop: the shared streams live as long as the process."""


def start_stream_thread(threads: int, cpus: list[int], shared: bool) -> None:
    """Set up a stream thread: bound to ``cpus`` (when given) before its OpenMP team of ``threads`` starts, so the
    team stays there too; ``shared`` marks the threads of shared streams."""
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, cpus)
    init_stream_thread(threads)
    _local.shared = shared


def stream_executor(name: str, config: StreamsConfig) -> StreamsExecutor | SharedStreams:
    """The executor that runs a compiled model's asynchronous requests.

    Streams of one thread each get their own. Streams of several threads are shared by every compiled model
    with the same layout: each such stream thread has a GNU OpenMP team, and once the process holds more team
    threads than cores every team stops spinning between parallel regions (see
    :meth:`vinerun.plugins.cpu.kernels._dnnl.Primitive.reordered`). Measured on 2 cores: a second LATENCY model,
    idle, made the first one's async MobileNetV2 inference 4.6 -> 7.4 ms. A LATENCY stream uses every core
    anyway, so two models' requests on one stream queue up instead of splitting the cores.
    """
    per_stream = config.threads_per_stream

    def cpus_of(index: int) -> list[int]:
        return config.stream_cpus(index) if config.pinned else []

    if per_stream == 1:
        return StreamsExecutor(config.num_streams, name=name,
                               on_thread_start=lambda i: start_stream_thread(1, cpus_of(i), shared=False))
    key = (config.num_streams, per_stream, config.cpus if config.pinned else ())
    with _shared_lock:
        executor = _shared.get(key)
        if executor is None:
            executor = _shared[key] = StreamsExecutor(
                config.num_streams, name=f"CPU:shared-{per_stream}-threads",
                on_thread_start=lambda i: start_stream_thread(per_stream, cpus_of(i), shared=True))
    return SharedStreams(executor)
