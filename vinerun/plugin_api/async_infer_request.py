"""``IAsyncInferRequest``: a sync request driven through a pipeline of ``(executor, stage)`` pairs.

Each stage runs on its executor; when it returns, the next stage is submitted to the next
executor. A device changes the pipeline to overlap its work (e.g. a GPU: upload on one
executor, compute on another), the way OpenVINO's template plugin does. The default pipeline is
one stage, ``sync.infer(inputs)`` on the compiled model's stream executor.

After the last stage (or the first failure, or a cancellation) ``on_complete(error)`` runs in the
worker thread, then waiters are released: ``wait()`` returns after the callback. An exception in
``on_complete`` (a user callback) is logged and kept: ``wait()`` raises it as a ``CallbackError``.
Errors stay until the next ``start_async``, as in OpenVINO.

>>> request = IAsyncInferRequest(sync_request, StreamsExecutor(1))
>>> request.start_async([x])
>>> request.wait()
>>> request.outputs
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from vinerun.errors import CallbackError, RequestBusyError, RequestCancelledError
from vinerun.plugin_api.executors import IExecutor
from vinerun.plugin_api.infer_request import ISyncInferRequest

log = logging.getLogger("vinerun")

Stage = Callable[[], None]


class IAsyncInferRequest:
    """Asynchronous execution of one sync request: ``start_async``, ``wait``, ``wait_for``, ``cancel``."""

    def __init__(self, sync: ISyncInferRequest, executor: IExecutor):
        self.sync = sync
        self.pipeline: list[tuple[IExecutor, Stage]] = [(executor, self.infer_stage)]
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.on_complete: Callable[[BaseException | None], None] | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._done.set()
        self._busy = False
        self._cancelled = False
        self._error: BaseException | None = None
        self._runs = 0  # start_async calls so far: tells a finishing run whether its callback started another

    # --- the default stage ---------------------------------------------------------------
    def infer_stage(self) -> None:
        self.outputs = self.sync.infer(self.inputs)

    # --- control -------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._busy

    def start_async(self, inputs: list[Any]) -> None:
        """Run the pipeline on ``inputs`` (host arrays in model-input order); returns at once."""
        with self._lock:
            if self._busy:
                raise RequestBusyError("Infer request is busy: an asynchronous inference is still running; "
                                       "call wait() before starting another")
            self._busy = True
            self._cancelled = False
            self._error = None
            self._done.clear()
            self._runs += 1
        self.inputs = list(inputs)
        self.outputs = []
        self._submit(0)

    def _submit(self, index: int) -> None:
        if index == len(self.pipeline):
            self._finish(None)
            return
        executor, stage = self.pipeline[index]

        def task() -> None:
            if self._cancelled:
                self._finish(None)
                return
            try:
                stage()
            except BaseException as e:  # noqa: BLE001 - reported through wait()
                self._finish(e)
                return
            self._submit(index + 1)

        try:
            executor.submit(task)
        except BaseException as e:  # noqa: BLE001 - e.g. the executor was shut down
            self._finish(e)

    def _finish(self, error: BaseException | None) -> None:
        """Idle first, then the callback (which may start this request again, as in OpenVINO), then done."""
        if self._cancelled and not isinstance(error, RequestCancelledError):
            error = RequestCancelledError("Infer Request was canceled")
        with self._lock:
            self._error = error
            self._busy = False
            run = self._runs
        if self.on_complete is not None:
            try:
                self.on_complete(error)
            except BaseException as e:  # noqa: BLE001 - never lost: logged now, raised by wait()
                log.error("vinerun: the callback of an infer request raised %s: %s", type(e).__name__, e,
                          exc_info=e)
                err = CallbackError(f"The infer request callback raised {type(e).__name__}: {e}")
                err.__cause__ = e
                with self._lock:
                    if self._runs == run:
                        self._error = err
        with self._lock:
            if self._runs == run:  # else the callback started a new run, whose end sets it
                self._done.set()

    def cancel(self) -> None:
        """Stop a request in flight: stages not started are skipped, ``wait()`` raises "canceled".

        A stage already running finishes first (its result is discarded); an idle request is unaffected.
        """
        with self._lock:
            if not self._busy:
                return
            self._cancelled = True
        self.sync.cancel()

    def wait(self) -> None:
        """Block until the request is done; raise its error (inference, cancellation or callback)."""
        self._done.wait()
        self._raise()

    def wait_for(self, timeout_s: float) -> bool:
        """``True`` if done within ``timeout_s`` (and raise its error, if any), else ``False``."""
        if not self._done.wait(max(0.0, timeout_s)):
            return False
        self._raise()
        return True

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error
