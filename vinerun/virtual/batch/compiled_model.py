"""BATCH compiled model: single requests in, batched executions on the device.

When the model is batched, every request (sync or async) goes through the collector: a sync
``infer`` waits for its batch like an async one (as in OpenVINO, so one lone request takes
``AUTO_BATCH_TIMEOUT`` plus one unbatched run). When it is not, requests are the device's own.

>>> compiled = core.compile_model(model, "BATCH:CPU(8)", {"AUTO_BATCH_TIMEOUT": 100})
>>> compiled.get_property("AUTO_BATCH_SIZE"), compiled.get_property("AUTO_BATCH_DISABLED_REASON")
(8, '')
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from vinerun.ir.model import Model
from vinerun.plugin_api.async_infer_request import IAsyncInferRequest
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.executors import ImmediateExecutor
from vinerun.plugin_api.infer_request import ISyncInferRequest, ProfilingInfo
from vinerun.plugin_api.property_table import PropertyValues
from vinerun.virtual.batch.batcher import Batcher, Done, Job
from vinerun.virtual.batch.config import BATCH_SIZE, COMPILED_TABLE, DISABLED_REASON, TIMEOUT, TUNABLE
from vinerun.virtual.batch.runner import BatchRunner


class BatchCompiledModel(ICompiledModel):
    """``single``: the model compiled on the device as is; ``batched``: compiled with batch ``size``
    (None, with ``reason``, when the model cannot be batched).

    >>> impl = core.compile_model(cnn, "BATCH:CPU(8)")._impl
    >>> impl.size, list(impl.batched.inputs[0].get_shape())
    (8, [8, 3, 32, 32])
    """

    def __init__(self, model: Model, device: str, size: int, single: ICompiledModel,
                 batched: ICompiledModel | None, reason: str, values: PropertyValues):
        super().__init__(model.clone(), "BATCH")
        self.device = device
        self.size = size if batched is not None else 1
        self.single = single
        self.batched = batched
        self.reason = reason
        self.config: dict[str, Any] = {p.name: values.get(p.name) for p in TUNABLE}
        self.properties = PropertyValues(COMPILED_TABLE, dict(self.config), computed={
            "NETWORK_NAME": lambda: self.model.friendly_name,
            "OPTIMAL_NUMBER_OF_INFER_REQUESTS": self._optimal_requests,
            "EXECUTION_DEVICES": lambda: [self.device],
            BATCH_SIZE: lambda: self.size,
            DISABLED_REASON: lambda: self.reason,
        })
        self.batcher: Batcher | None = None
        if batched is not None:
            runner = BatchRunner(batched, single)
            self.batcher = Batcher(size, values.get(TIMEOUT) / 1e3, runner.run_batch, runner.run_single,
                                   name=f"BATCH:{device}({size})")
            weakref.finalize(self, self.batcher.close)

    def _optimal_requests(self) -> int:
        """Batch size times the batched model's own optimum (OpenVINO's rule); the device's when unbatched."""
        if self.batched is None:
            return int(self.single.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        return self.size * int(self.batched.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))

    def create_sync_infer_request(self) -> ISyncInferRequest:
        if self.batcher is None:
            return self.single.create_sync_infer_request()
        return BatchInferRequest(self.batcher)

    def create_async_infer_request(self, sync: ISyncInferRequest) -> IAsyncInferRequest:
        if isinstance(sync, BatchInferRequest):
            return BatchAsyncInferRequest(sync)
        return self.single.create_async_infer_request(sync)

    def get_property(self, key: str) -> Any:
        """BATCH's own keys; any other goes to the device's compiled model (e.g. ``NUM_STREAMS``)."""
        key = str(key)
        if key == "SUPPORTED_PROPERTIES":
            return {**self.single.get_property(key), **COMPILED_TABLE.supported()}
        if key in COMPILED_TABLE:
            return self.properties.get(key)
        return (self.batched or self.single).get_property(key)

    def set_property(self, config: dict[str, Any]) -> None:
        """Only ``AUTO_BATCH_TIMEOUT`` changes after compilation (as in OpenVINO)."""
        converted = COMPILED_TABLE.convert_all(config)
        if TIMEOUT in converted and self.batcher is not None:
            self.batcher.timeout_s = converted[TIMEOUT] / 1e3
        self.properties.set(converted)

    def export_graph(self) -> Model:
        return self.model

    def get_runtime_model(self) -> Model:
        return (self.batched or self.single).get_runtime_model()


class BatchInferRequest(ISyncInferRequest):
    """A single request that joins a batch; ``infer`` waits for its share of the batched outputs.

    >>> BatchInferRequest(batcher).infer([x])      # returns when its batch (or the timeout) ran
    """

    def __init__(self, batcher: Batcher):
        self.batcher = batcher
        #: the job that finished last: its execution's counters are this request's profile
        self.finished: Job | None = None

    def submit(self, job: Job) -> None:
        """Queue ``job``; its ``done(outputs, error)`` is called from a worker thread (maybe before this returns).
        Per request nothing refers back to itself (no reference cycle): its objects are freed at once, leaving
        Python's cyclic collector idle, which at thousands of requests a second would otherwise cost as much as
        the rest of the request path."""
        self.batcher.put(job)

    def infer(self, inputs: list[Any]) -> list[Any]:
        box: list[Any] = [None, None]
        ready = threading.Event()

        def done(outputs: list[Any] | None, error: BaseException | None) -> None:
            box[0], box[1] = outputs, error
            ready.set()

        job = Job(list(inputs), done)
        self.submit(job)
        ready.wait()
        self.finished = job
        if box[1] is not None:
            raise box[1]
        return box[0]

    def get_profiling_info(self) -> list[ProfilingInfo]:
        """The counters of the (batched or single) execution that ran this request last."""
        job = self.finished
        return list(job.profile) if job is not None else []


class BatchAsyncInferRequest(IAsyncInferRequest):
    """An asynchronous request whose only stage is waiting in the batcher; no thread waits for it.

    >>> request = BatchAsyncInferRequest(BatchInferRequest(batcher))
    >>> request.start_async([x]); request.wait()
    """

    def __init__(self, sync: BatchInferRequest):
        super().__init__(sync, ImmediateExecutor())
        self._batch = sync
        self._job: Job | None = None
        # made once: a bound method or lambda per start would be a new object in each job
        self._done_fn: Done = self._batch_done
        self._cancelled_fn: Callable[[], bool] = lambda: self._cancelled

    def _submit(self, index: int) -> None:
        if index != 0:
            super()._submit(index)
            return
        try:
            job = self._job = Job(self.inputs, self._done_fn, self._cancelled_fn)  # set before it can finish
            self._batch.submit(job)
        except BaseException as e:  # noqa: BLE001 - reported through wait()
            self._finish(e)

    def cancel(self) -> None:
        """A request still waiting for its batch leaves the queue at once; ``wait()`` raises "canceled"."""
        super().cancel()
        job = self._job
        if self._cancelled and job is not None:
            self._batch.batcher.withdraw(job)

    def _batch_done(self, outputs: list[Any] | None, error: BaseException | None) -> None:
        self._batch.finished = self._job
        if error is None and outputs is not None:
            self.outputs = outputs
        self._finish(error)
