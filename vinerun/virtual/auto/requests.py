"""Infer requests of AUTO and MULTI: each inference runs on the device the schedule grants.

A request keeps one device request per device it has used (made on first use), so a device's state
and buffers stay with it. A failed inference re-runs on the next device (``ENABLE_RUNTIME_FALLBACK``;
never for input errors or cancellation). Asynchronous inferences run on the granted device's own
stream executor, so its thread setup (cores per stream) applies.

>>> request = auto_compiled.create_sync_infer_request()       # doctest: +SKIP
>>> request.infer([x]); request.last_device                   # doctest: +SKIP
'GNA'
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vinerun.errors import InferenceError, InputError, RequestCancelledError
from vinerun.plugin_api.async_infer_request import IAsyncInferRequest
from vinerun.plugin_api.executors import ImmediateExecutor
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo

if TYPE_CHECKING:
    from vinerun.virtual.auto.compiled_model import AutoCompiledModel

log = logging.getLogger("vinerun")

Done = Callable[[list[Any] | None, BaseException | None], None]


class AutoInferRequest(ISyncInferRequest):
    """The sync side: ``infer`` runs in the caller's thread on the granted device."""

    def __init__(self, compiled: AutoCompiledModel):
        self.compiled = compiled
        self._subs: dict[str, ISyncInferRequest] = {}
        self._lock = threading.Lock()
        #: the device that produced the latest outputs (``None`` before the first inference)
        self.last_device: str | None = None
        #: whether the latest outputs came from the CPU start-up helper
        self.from_helper = False
        self._running: ISyncInferRequest | None = None

    def sub_request(self, device: str) -> ISyncInferRequest:
        """This request's request on ``device`` (created on first use)."""
        sub = self._subs.get(device)
        if sub is not None:
            return sub
        with self._lock:
            sub = self._subs.get(device)
            if sub is None:
                sub = self.compiled.device_model(device).create_sync_infer_request()
                self._subs[device] = sub
            return sub

    # --- running ------------------------------------------------------------------------------
    def infer(self, inputs: list[Any]) -> list[Any]:
        schedule = self.compiled.schedule
        device = schedule.try_acquire()
        if device is None:  # every slot taken: wait for one
            granted: list[str] = []
            ready = threading.Event()

            def grant(device: str) -> None:
                granted.append(device)
                ready.set()

            schedule.acquire(grant)
            ready.wait()
            device = granted[0]
        try:
            return self.execute(device, inputs)
        finally:
            schedule.release(device)

    def start(self, inputs: list[Any], done: Done) -> None:
        """Run asynchronously on the granted device's executor; ``done(outputs, error)`` from a worker."""
        schedule = self.compiled.schedule

        def grant(device: str) -> None:
            def task() -> None:
                outputs, error = None, None
                try:
                    outputs = self.execute(device, inputs)
                except BaseException as e:  # noqa: BLE001 - reported through done()
                    error = e
                schedule.release(device)  # before done(): a new start finds the slot free
                done(outputs, error)

            try:
                self.compiled.device_model(device).task_executor().submit(task)
            except BaseException as e:  # noqa: BLE001 - e.g. the executor was shut down
                schedule.release(device)
                done(None, e)

        schedule.acquire(grant)

    def execute(self, device: str, inputs: list[Any]) -> list[Any]:
        """Infer on ``device``; on failure, on the next devices of the fallback chain."""
        chain = [device]  # the fallback devices are looked up after a failure only
        errors: list[tuple[str, BaseException]] = []
        for k, dev in enumerate(chain):  # chain grows inside the loop
            helper = self.compiled.is_helper(dev)
            try:
                sub = self.sub_request(dev)
                self._running = sub
                outputs = sub.infer(inputs)
            except (InputError, RequestCancelledError):
                raise  # the user's input or the user's cancel: another device would not help
            except Exception as e:  # noqa: BLE001 - re-run on the next device, if any
                errors.append((dev, e))
                if k == 0:
                    chain += self.compiled.fallback_devices(device)
                if k + 1 < len(chain):
                    log.warning("%s: inference on %s failed (%s: %s); re-running it on %s (runtime fallback)",
                                self.compiled.device_name, dev, type(e).__name__, e, chain[k + 1])
                continue
            finally:
                self._running = None
            self.last_device, self.from_helper = dev, helper
            self.compiled.record(dev, helper)
            return outputs
        if len(errors) == 1:
            raise errors[0][1]
        detail = "; ".join(f"{d}: {type(e).__name__}: {e}" for d, e in errors)
        raise InferenceError(f"{self.compiled.device_name}: the inference failed on every device ({detail})") \
            from errors[0][1]

    def cancel(self) -> None:
        running = self._running
        if running is not None:
            running.cancel()

    # --- what the user reads back -------------------------------------------------------------
    def _last(self) -> ISyncInferRequest:
        device = self.last_device or self.compiled.current_device()
        return self.sub_request(device)

    def get_profiling_info(self) -> list[ProfilingInfo]:
        """The counters of the device that ran the latest inference."""
        return self._last().get_profiling_info()

    def query_state(self) -> list[Any]:
        """Stateful models run on one device (fallbacks are off for them): that device's variables."""
        return self._last().query_state()


class AutoAsyncInferRequest(IAsyncInferRequest):
    """The async side: one asynchronous stage, the granted device's executor running the inference."""

    def __init__(self, sync: AutoInferRequest):
        super().__init__(sync, ImmediateExecutor())
        self.auto = sync

    def _submit(self, index: int) -> None:
        try:
            self.auto.start(self.inputs, self._device_done)
        except BaseException as e:  # noqa: BLE001 - e.g. compiling a fallback device failed
            self._finish(e)

    def _device_done(self, outputs: list[Any] | None, error: BaseException | None) -> None:
        if error is None and outputs is not None:
            self.outputs = outputs
        self._finish(error)
