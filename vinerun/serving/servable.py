"""One loaded model version: its compiled model and an ``AsyncInferQueue`` that keeps every stream busy.

Requests hold an in-flight guard while they run; unloading waits for the guard count to reach 0.

>>> cfg = ModelConfig("m", "/models/m")
>>> version = ServedVersion.load(core, "m", 1, "/models/m/1/model.onnx", cfg)  # doctest: +SKIP
>>> future = version.submit({"x": array})      # a Future of the output arrays  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections import deque
from typing import Any

import numpy as np

from vinerun.errors import InputError, RequestBusyError
from vinerun.runtime import AsyncInferQueue, CompiledModel, Core
from vinerun.serving.config import ModelConfig
from vinerun.serving.datatypes import from_element_type
from vinerun.serving.errors import InferenceFailed, InvalidInput, NotSupported, ReshapeFailed
from vinerun.serving.tensors import TensorSpec

#: how long a request may stay "busy" after its job was reported done before that is an error
BUSY_WAIT_S = 1.0
#: TensorFlow Serving states (GetModelStatus / GET /v1/config)
STATES = {"START": 10, "LOADING": 20, "AVAILABLE": 30, "UNLOADING": 40, "END": 50}


class _ServingQueue(AsyncInferQueue):
    """An ``AsyncInferQueue`` whose jobs each complete a ``Future`` (result or error) given as userdata.

    ``slots`` counts idle requests; asyncio callers wait for one without a thread (``wait_slot``).
    """

    def __init__(self, model: CompiledModel, jobs: int) -> None:
        super().__init__(model, jobs)
        self.slots = threading.BoundedSemaphore(len(self))
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = deque()
        self._waiters_lock = threading.Lock()

    def start_async(self, inputs: Any = None, userdata: Any = None, share_inputs: bool = False) -> None:
        """As ``AsyncInferQueue.start_async``, but riding out the short window in which a job is back in the
        idle list while its request still reports busy (the queue marks it idle from inside the request's
        completion hook, before the request clears its busy flag)."""
        deadline = time.monotonic() + BUSY_WAIT_S
        while True:
            try:
                super().start_async(inputs, userdata, share_inputs)
                return
            except RequestBusyError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0)  # the previous job's thread is finishing its bookkeeping

    def wait_slot(self) -> asyncio.Future:
        """An asyncio future set when a slot may have become free (then try again)."""
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        with self._waiters_lock:
            self._waiters.append((loop, waiter))
        return waiter

    def _release(self) -> None:
        self.slots.release()
        with self._waiters_lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                if not waiter.done():
                    loop.call_soon_threadsafe(_wake, waiter)
                    break

    def _hook_every_job(self) -> bool:
        return True  # each job completes its future

    def _finish_job(self, index: int, error: BaseException | None) -> None:
        future: concurrent.futures.Future = self._userdata[index]
        outputs: list[np.ndarray] = []
        try:
            if error is None:
                outputs = [np.array(o, copy=True) for o in self._requests[index].results.to_tuple()]
        except Exception as e:  # noqa: BLE001 - reported to the caller, the slot is still released
            error = e
        finally:
            self._userdata[index] = None
            self._release()  # the slot is free before the caller sees the result
        if error is None:
            future.set_result(outputs)
        else:
            future.set_exception(error)


def _wake(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _port_name(port: Any, index: int, taken: set[str], prefer: str | None = None) -> str:
    """A port's client-facing name: the preferred one if the port has it, else the first not ``taken``."""
    names = sorted(port.get_names())
    if prefer in names:
        return prefer
    free = [n for n in names if n not in taken]
    return free[0] if free else (names[0] if names else f"out_{index}")


def _specs(ports: list[Any], taken: set[str] | None = None, inputs: bool = False) -> list[TensorSpec]:
    specs = []
    for i, port in enumerate(ports):
        prefer = getattr(getattr(port, "node", None), "friendly_name", None) if inputs else None
        name = _port_name(port, i, taken or set(), prefer)
        shape = [-1 if d.is_dynamic else d.get_length() for d in port.get_partial_shape()]
        specs.append(TensorSpec(name, from_element_type(port.get_element_type()), shape))
    return specs


def _reshape(model: Any, cfg: ModelConfig) -> None:
    if cfg.shape is None and cfg.batch_size is None:
        return
    try:
        if isinstance(cfg.shape, dict):
            model.reshape(cfg.shape)
        elif cfg.shape is not None:
            model.reshape({model.inputs[i].get_any_name(): cfg.shape for i in range(len(model.inputs))})
        else:
            new = {}
            for port in model.inputs:
                dims = [-1 if d.is_dynamic else d.get_length() for d in port.get_partial_shape()]
                if dims:
                    new[port.get_any_name()] = [cfg.batch_size, *dims[1:]]
            model.reshape(new)
    except Exception as e:  # noqa: BLE001 - any reshape failure is reported as OVMS's reshape error
        raise ReshapeFailed(f"model {cfg.name!r}: {e}") from e


class ServedVersion:
    """A compiled model version plus its request queue, state and in-flight count.

    >>> version.enter(); outputs = version.submit({"image": x}).result(); version.leave()  # doctest: +SKIP
    """

    def __init__(self, name: str, version: int, path: str, compiled: CompiledModel, nireq: int) -> None:
        self.name, self.version, self.path = name, version, path
        self.compiled = compiled
        self.queue = _ServingQueue(compiled, nireq)
        self.inputs = _specs(compiled.inputs, inputs=True)
        self.outputs = _specs(compiled.outputs, {s.name for s in self.inputs})
        self.state = "AVAILABLE"
        self.error_code, self.error_message = 0, "OK"
        self._in_flight = 0
        self._cond = threading.Condition()
        try:
            self.streams = int(compiled.get_property("NUM_STREAMS"))
        except Exception:  # noqa: BLE001 - devices without the property report 1 stream
            self.streams = 1

    @classmethod
    def load(cls, core: Core, name: str, version: int, path: str, cfg: ModelConfig) -> ServedVersion:
        """Read, reshape (``--shape``/``--batch_size``) and compile ``path`` for ``cfg.target_device``."""
        model = core.read_model(path)
        _reshape(model, cfg)
        if cfg.layout and isinstance(cfg.layout, str) and ":" in cfg.layout:
            raise NotSupported(f"layout conversion {cfg.layout!r} (model {name!r})")
        compiled = core.compile_model(model, cfg.target_device or "CPU", dict(cfg.plugin_config))
        return cls(name, version, path, compiled, cfg.nireq)

    # --- in-flight guard -----------------------------------------------------------------
    def enter(self) -> None:
        with self._cond:
            self._in_flight += 1

    def leave(self) -> None:
        with self._cond:
            self._in_flight -= 1
            self._cond.notify_all()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def drain(self, poll_s: float = 0.01) -> None:
        """Wait until every request that entered has left (OVMS polls every 10 ms)."""
        with self._cond:
            while self._in_flight:
                self._cond.wait(poll_s)

    # --- inference -----------------------------------------------------------------------
    def try_submit(self, inputs: dict[str, np.ndarray]) -> concurrent.futures.Future | None:
        """Start an inference if a request is idle; ``None`` if all are busy."""
        if not self.queue.slots.acquire(blocking=False):
            return None
        return self._start(inputs)

    def submit(self, inputs: dict[str, np.ndarray]) -> concurrent.futures.Future:
        """Start an inference, waiting for an idle request; the future yields the outputs in model order."""
        self.queue.slots.acquire()
        return self._start(inputs)

    async def submit_async(self, inputs: dict[str, np.ndarray]) -> concurrent.futures.Future:
        """:meth:`submit` for asyncio: waits for an idle request without blocking the loop or a thread."""
        while True:
            future = self.try_submit(inputs)
            if future is not None:
                return future
            waiter = self.queue.wait_slot()
            future = self.try_submit(inputs)  # a slot freed before the waiter was registered
            if future is not None:
                waiter.cancel()
                return future
            await waiter

    def _start(self, inputs: dict[str, np.ndarray]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.started_at = time.perf_counter()  # type: ignore[attr-defined]
        try:
            self.queue.start_async(inputs, userdata=future)
        except (InputError, ValueError, TypeError) as e:
            self.queue._release()
            raise InvalidInput(str(e)) from e
        except Exception as e:
            self.queue._release()
            raise InferenceFailed(f"{type(e).__name__}: {e}") from e
        return future

    def close(self) -> None:
        """Drop the compiled model (after :meth:`drain`)."""
        self.state = "END"
        self.queue = None  # type: ignore[assignment]
        self.compiled = None  # type: ignore[assignment]
