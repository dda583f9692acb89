"""The runtimes ``compare.py`` puts side by side, behind one small interface.

A :class:`Contender` compiles a file under a hint and hands back two runners: ``sync`` (one request,
``infer`` in a loop: the LATENCY column) and ``throughput`` (a function that keeps the runtime busy
for a number of seconds and returns the frames done: the FPS column).

- vinerun / openvino (same API): ``PERFORMANCE_HINT`` LATENCY (1 stream) or THROUGHPUT, with
  ``OPTIMAL_NUMBER_OF_INFER_REQUESTS`` requests in flight through an ``AsyncInferQueue``;
  ``INFERENCE_PRECISION_HINT`` f32 or bf16.
- onnxruntime (CPU EP): LATENCY is one session with its default threads (one per core);
  THROUGHPUT is one session per core, each with ``intra_op_num_threads=1``, each driven by its own
  worker of a thread pool (``run`` releases the GIL), the way openvino's THROUGHPUT hint gives one
  single-threaded stream per core.

>>> [c.name for c in available(bf16=False)][:1]
['vinerun f32']
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

Feed = dict[str, np.ndarray]
SyncRun = Callable[[Feed], list[np.ndarray]]
Throughput = Callable[[float], int]


class Contender:
    """One runtime at one precision.

    >>> c = Contender("vinerun f32", "vinerun", "f32")
    >>> c.runtime, c.precision
    ('vinerun', 'f32')
    """

    def __init__(self, name: str, runtime: str, precision: str) -> None:
        self.name, self.runtime, self.precision = name, runtime, precision

    def compile(self, path: str, hint: str) -> Any:
        """Read and compile ``path`` under ``hint`` ("LATENCY" or "THROUGHPUT") in a fresh Core/session."""
        raise NotImplementedError

    def sync(self, compiled: Any) -> SyncRun:
        raise NotImplementedError

    def throughput(self, compiled: Any, feed: Feed) -> Throughput:
        raise NotImplementedError


class OpenVinoLike(Contender):
    """vinerun or openvino: the same Python API."""

    def compile(self, path: str, hint: str) -> Any:
        module = importlib.import_module(self.runtime)
        core = module.Core()
        config = {"PERFORMANCE_HINT": hint}
        if self.precision != "int8":  # int8: the runtime's defaults (the file's int8, its default float precision)
            config["INFERENCE_PRECISION_HINT"] = self.precision
        return core.compile_model(core.read_model(path), "CPU", config)

    def sync(self, compiled: Any) -> SyncRun:
        request = compiled.create_infer_request()
        outputs = range(len(compiled.outputs))

        def run(feed: Feed) -> list[np.ndarray]:
            request.infer(feed)
            return [request.get_output_tensor(i).data for i in outputs]
        return run

    def throughput(self, compiled: Any, feed: Feed) -> Throughput:
        module = importlib.import_module(self.runtime)
        queue = module.AsyncInferQueue(compiled, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        for _ in range(len(queue)):  # warm-up: every request once
            queue.start_async(feed)
        queue.wait_all()

        def run(seconds: float) -> int:
            n, end = 0, time.perf_counter() + seconds
            while time.perf_counter() < end:
                queue.start_async(feed)  # blocks until a request is idle: keeps every stream busy
                n += 1
            queue.wait_all()
            return n
        return run


class OtherFile(Contender):
    """``inner`` on a fixed file, whatever file it is given: the "vinerun f32 (f32 model)" row of an int8 model
    runs the f32 model it was quantized from."""

    def __init__(self, name: str, inner: Contender, path: str) -> None:
        super().__init__(name, inner.runtime, inner.precision)
        self.inner, self.path = inner, path

    def compile(self, path: str, hint: str) -> Any:
        return self.inner.compile(self.path, hint)

    def sync(self, compiled: Any) -> SyncRun:
        return self.inner.sync(compiled)

    def throughput(self, compiled: Any, feed: Feed) -> Throughput:
        return self.inner.throughput(compiled, feed)


class OnnxRuntime(Contender):
    """onnxruntime's CPU execution provider (f32, or the int8 of a QDQ file: its QDQ fusions run it in int8)."""

    def compile(self, path: str, hint: str) -> Any:
        import onnxruntime as ort

        ort.set_default_logger_severity(3)  # errors only: silero-vad's unused initializers warn on every load
        if hint == "LATENCY":
            return ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        sessions = []
        for _ in range(cores()):
            options = ort.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
            sessions.append(ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]))
        return sessions

    def sync(self, compiled: Any) -> SyncRun:
        return lambda feed: compiled.run(None, feed)

    def throughput(self, compiled: Any, feed: Feed) -> Throughput:
        pool = ThreadPoolExecutor(len(compiled), thread_name_prefix="ort-stream")
        for session in compiled:  # warm-up
            session.run(None, feed)

        def loop(session: Any, end: float) -> int:
            n = 0
            while time.perf_counter() < end:
                session.run(None, feed)
                n += 1
            return n

        def run(seconds: float) -> int:
            end = time.perf_counter() + seconds
            return sum(f.result() for f in [pool.submit(loop, s, end) for s in compiled])
        return run


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def native_bf16() -> bool:
    """Whether the CPU computes bf16 natively (AVX512-BF16 or AMX), as openvino's bf16 default needs."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def available(bf16: bool, runtimes: tuple[str, ...] = ("vinerun", "openvino", "onnxruntime")) -> list[Contender]:
    """The contenders to run, in turn order: vinerun and openvino in f32 (and bf16 when asked),
    then onnxruntime; a runtime that is not installed is left out."""
    out: list[Contender] = []
    precisions = ("f32", "bf16") if bf16 else ("f32",)
    for precision in precisions:
        out += [OpenVinoLike(f"{rt} {precision}", rt, precision) for rt in ("vinerun", "openvino")
                if rt in runtimes and importable(rt)]
    if "onnxruntime" in runtimes and importable("onnxruntime"):
        out.append(OnnxRuntime("onnxruntime f32", "onnxruntime", "f32"))
    return out


def int8_contenders(f32_path: str, quantized: str,
                    runtimes: tuple[str, ...] = ("vinerun", "openvino", "onnxruntime")) -> list[Contender]:
    """The contenders of a quantized file ``quantized``: vinerun and openvino with no precision hint (their
    defaults: int8 where the file is quantized; openvino's default int8 execution is the anchor), onnxruntime
    (ONNX files only), and "vinerun f32 (f32 model)": vinerun f32 on the f32 file the model was quantized from.

    >>> [c.name for c in int8_contenders("m.onnx", "m.xml", ("vinerun", "onnxruntime"))]
    ['vinerun int8', 'vinerun f32 (f32 model)']
    """
    out: list[Contender] = [OpenVinoLike(f"{rt} int8", rt, "int8") for rt in ("vinerun", "openvino")
                            if rt in runtimes and importable(rt)]
    if "onnxruntime" in runtimes and quantized.endswith(".onnx") and importable("onnxruntime"):
        out.append(OnnxRuntime("onnxruntime int8", "onnxruntime", "int8"))
    if "vinerun" in runtimes and importable("vinerun"):
        out.append(OtherFile("vinerun f32 (f32 model)", OpenVinoLike("vinerun f32", "vinerun", "f32"), f32_path))
    return out


def by_name(name: str) -> Contender:
    """The contender called ``name`` (e.g. "openvino bf16"; "vinerun f32 (f32 model)" is "vinerun f32" on the
    file it is given), for the memory child process."""
    runtime, precision = name.split()[:2]
    return OnnxRuntime(name, runtime, precision) if runtime == "onnxruntime" else OpenVinoLike(name, runtime, precision)
