"""``AsyncInferQueue``: a pool of infer requests kept busy, with one callback for all of them.

Errors are never lost: an inference that fails or a callback that raises is logged when it
happens and raised (the callback's own exception, as in OpenVINO) by the next
:meth:`AsyncInferQueue.wait_all`. The requests run on the compiled model's daemon stream threads, so
neither exiting the interpreter nor dropping a busy queue blocks.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from vinerun.errors import PropertyError, RequestCancelledError
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

    def _make_hook(self, index: int) -> Callable[[BaseException | None], None]:
        def hook(error: BaseException | None) -> None:
            self._job_done(index, error)
        return hook

    def _job_done(self, index: int, error: BaseException | None) -> None:
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
        with self._cond:
            if error is not None and not isinstance(error, RequestCancelledError):
                self._errors.append(error)
            self._idle.append(index)
            self._cond.notify_all()

    def set_callback(self, callback: Callable[[InferRequest, Any], Any]) -> None:
        """``callback(request, userdata)`` runs in a worker thread after each job; keep it short and
        never block in it waiting for this queue."""
        self._callback = callback

    def start_async(self, inputs: Any = None, userdata: Any = None, share_inputs: bool = False) -> None:
        """Run ``inputs`` on the next idle request (waiting for one if all are busy)."""
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

    def wait_all(self) -> None:
        """Wait until every job is done; then raise the first error since the last ``wait_all``, if any."""
        with self._cond:
            self._cond.wait_for(lambda: len(self._idle) == len(self._requests))
            errors, self._errors = self._errors, []
        if errors:
            if len(errors) > 1:
                log.error("vinerun: AsyncInferQueue: %d jobs failed; raising the first", len(errors))
            raise errors[0]

    def is_ready(self) -> bool:
        """Whether a request is idle (``start_async`` would not wait)."""
        with self._cond:
            return bool(self._idle)

    def get_idle_request_id(self) -> int:
        """The id of an idle request, waiting for one if all are busy."""
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
        return f"<AsyncInferQueue: {len(self._requests)} jobs, {len(self._idle)} idle>"
