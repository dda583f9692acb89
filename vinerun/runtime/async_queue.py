"""``AsyncInferQueue``: a pool of infer requests kept busy, with one callback for all of them.

Errors are never lost: an inference that fails or a callback that raises is logged when it
happens and raised (the callback's own exception, as in OpenVINO) by the next
:meth:`AsyncInferQueue.wait_all`. The requests run on the compiled model's daemon stream threads, so
neither exiting the interpreter nor dropping a busy queue blocks.

Where the device offers a request loop (:mod:`vinerun.plugin_api.request_loop`: the CPU, for a model that
is one native segment), the queue's requests run there: the stream threads take the submitted requests and
run them without the GIL, and the only Python per request is ``start_async``'s (the bundled demo CNN on a
16-core Xeon, 16 streams: 70,900 requests/s, 5,700 through the executor, openvino 15,000; benchmarks/README.md).
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from vinerun.errors import PropertyError, RequestCancelledError
from vinerun.plugin_api.request_loop import NOT_FAILED, RUN_IN_PYTHON, Hook, IRequestLoop
from vinerun.runtime.compiled_model import CompiledModel
from vinerun.runtime.infer_request import InferRequest

log = logging.getLogger("vinerun")


class AsyncInferQueue:
    """``jobs`` infer requests (0: the model's ``OPTIMAL_NUMBER_OF_INFER_REQUESTS``) used round by round.

    >>> queue = AsyncInferQueue(compiled)
    >>> results = {}
    >>> queue.set_callback(lambda request, frame: results.update({frame: request.results[0]}))
    >>> for frame, x in enumerate(frames):
    ...     queue.start_async({"data": x}, userdata=frame)
    >>> queue.wait_all()
    """

    def __init__(self, model: CompiledModel, jobs: int = 0):
        if not isinstance(jobs, int) or jobs < 0:
            raise PropertyError(f"AsyncInferQueue jobs must be an int >= 0 (0 = OPTIMAL_NUMBER_OF_INFER_REQUESTS), "
                                f"got {jobs!r}")
        count = jobs or int(model.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        self._requests = [model.create_infer_request() for _ in range(max(1, count))]
        self._userdata: list[Any] = [None] * len(self._requests)
        self._idle: deque[int] = deque(range(len(self._requests)))
        self._cond = threading.Condition()
        self._callback: Callable[[InferRequest, Any], Any] | None = None
        self._errors: list[BaseException] = []
        for i, request in enumerate(self._requests):
            request._done_hook = self._make_hook(i)
        make_loop = getattr(model._impl, "request_loop", None)
        self._loop: IRequestLoop | None = None if make_loop is None else make_loop(len(self._requests),
                                                                                   _loop_hook(self))
        if self._loop is not None:
            weakref.finalize(self, self._loop.close)
            for i, request in enumerate(self._requests):
                request._queue_wait = functools.partial(self._loop.wait, i)  # (timeout) -> done
                request._queue_latency = functools.partial(self._loop.latency, i)

    def _make_hook(self, index: int) -> Callable[[BaseException | None], None]:
        def hook(error: BaseException | None) -> None:
            self._job_done(index, error)
        return hook

    def _job_done(self, index: int, error: BaseException | None) -> None:
        """A request's completion hook (the executor's path): the job is over, then the request is idle."""
        self._finish_job(index, error)
        with self._cond:
            self._idle.append(index)
            self._cond.notify_all()

    def _loop_done(self, index: int, status: int) -> None:
        """A request loop's hook, on its stream thread: run the job in Python where asked, then finish it (the
        loop makes the slot idle after this returns)."""
        error = None
        try:
            self._requests[index]._finish_in_loop(status == RUN_IN_PYTHON)
        except BaseException as e:  # noqa: BLE001 - kept for wait_all()
            error = e
        if error is None and status not in (NOT_FAILED, RUN_IN_PYTHON):
            error = self._loop.error(status)  # type: ignore[union-attr] - only a loop calls this hook
        self._finish_job(index, error)

    def _finish_job(self, index: int, error: BaseException | None) -> None:
        """After each job, on the stream's thread: the callback, and the error kept for ``wait_all``."""
        error = self._report(index, error)
        if error is not None:
            with self._cond:
                self._errors.append(error)

    def _hook_every_job(self) -> bool:
        """Whether a request loop must call back after every job (else only after failed ones, at wait_all)."""
        return self._callback is not None

    def _report(self, index: int, error: BaseException | None) -> BaseException | None:
        """Call the callback after a job (or log its error); the error wait_all is to raise, if any."""
        if error is None and self._callback is not None:
            try:
                self._callback(self._requests[index], self._userdata[index])
            except BaseException as e:  # noqa: BLE001 - kept for wait_all(), never lost
                log.error("vinerun: AsyncInferQueue callback raised %s: %s (job %d, userdata %r)",
                          type(e).__name__, e, index, self._userdata[index], exc_info=e)
                error = e  # wait_all() raises the callback's own exception, as OpenVINO's queue does
        elif error is not None and not isinstance(error, RequestCancelledError):
            log.error("vinerun: AsyncInferQueue job %d (userdata %r) failed: %s: %s",
                      index, self._userdata[index], type(error).__name__, error)
        return None if isinstance(error, RequestCancelledError) else error

    def set_callback(self, callback: Callable[[InferRequest, Any], Any]) -> None:
        """``callback(request, userdata)`` runs in a worker thread after each job; keep it short and
        never block in it waiting for this queue."""
        self._callback = callback

    def start_async(self, inputs: Any = None, userdata: Any = None, share_inputs: bool = False) -> None:
        """Run ``inputs`` on the next idle request (waiting for one if all are busy)."""
        if self._loop is not None:
            self._start_in_loop(self._loop, inputs, userdata, share_inputs)
            return
        with self._cond:
            self._cond.wait_for(lambda: bool(self._idle))
            index = self._idle.popleft()
        self._userdata[index] = userdata
        try:
            self._requests[index].start_async(inputs, share_inputs=share_inputs)
        except BaseException:
            with self._cond:
                self._idle.appendleft(index)
                self._cond.notify_all()
            raise

    def _start_in_loop(self, loop: IRequestLoop, inputs: Any, userdata: Any, share_inputs: bool) -> None:
        index = loop.take()
        self._userdata[index] = userdata
        try:
            arrays, outputs = self._requests[index]._start_in_loop(inputs, share_inputs)
            loop.submit(index, arrays, outputs, notify=self._hook_every_job())
        except BaseException:
            loop.release(index)
            raise

    def wait_all(self) -> None:
        """Wait until every job is done; then raise the first error since the last ``wait_all``, if any."""
        if self._loop is not None:
            self._loop.wait()
            for index, error in self._loop.failures():  # native runs without a hook: logged here
                self._report(index, error)
                with self._cond:
                    self._errors.append(error)
        with self._cond:
            self._cond.wait_for(lambda: len(self._idle) == len(self._requests))
            errors, self._errors = self._errors, []
        if errors:
            if len(errors) > 1:
                log.error("vinerun: AsyncInferQueue: %d jobs failed; raising the first", len(errors))
            raise errors[0]

    def is_ready(self) -> bool:
        """Whether a request is idle (``start_async`` would not wait)."""
        if self._loop is not None:
            return self._loop.idle() > 0
        with self._cond:
            return bool(self._idle)

    def get_idle_request_id(self) -> int:
        """The id of an idle request, waiting for one if all are busy."""
        if self._loop is not None:
            index = self._loop.take()
            self._loop.release(index)
            return index
        with self._cond:
            self._cond.wait_for(lambda: bool(self._idle))
            return self._idle[0]

    @property
    def userdata(self) -> list[Any]:
        """The userdata of each request's latest job."""
        return list(self._userdata)

    def __len__(self) -> int:
        return len(self._requests)

    def __iter__(self) -> Iterator[InferRequest]:
        return iter(self._requests)

    def __getitem__(self, index: int) -> InferRequest:
        return self._requests[index]

    def __repr__(self) -> str:
        idle = self._loop.idle() if self._loop is not None else len(self._idle)
        return f"<AsyncInferQueue: {len(self._requests)} jobs, {idle} idle>"


def _loop_hook(queue: AsyncInferQueue) -> Hook:
    """The request loop's hook for ``queue``, holding it weakly: the loop's threads must not keep it alive (its
    finalizer closes the loop)."""
    ref = weakref.ref(queue)

    def hook(index: int, status: int) -> None:
        q = ref()
        if q is not None:
            q._loop_done(index, status)
    return hook
