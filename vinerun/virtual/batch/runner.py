"""Runs jobs on the device: a batch on the batched compiled model (inputs stacked along dimension 0,
outputs split back), a single job on the unbatched one. Each runs on its compiled model's executor
with a sync request taken from a pool, so batches run on the device's streams in parallel.

>>> runner = BatchRunner(batched=cpu_batched_8, single=cpu_single)
>>> runner.run_batch(jobs)        # returns at once; each job's ``done`` is called when its slice is ready
"""

from __future__ import annotations

import queue

import numpy as np

from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest
from vinerun.virtual.batch.batcher import Job


class _Pool:
    """Sync requests of one compiled model, made on demand and reused."""

    def __init__(self, compiled: ICompiledModel):
        self.compiled = compiled
        self._free: queue.SimpleQueue[ISyncInferRequest] = queue.SimpleQueue()

    def take(self) -> ISyncInferRequest:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            return self.compiled.create_sync_infer_request()

    def give(self, request: ISyncInferRequest) -> None:
        self._free.put(request)


class BatchRunner:
    """Executes jobs for a :class:`~vinerun.virtual.batch.batcher.Batcher`.

    >>> BatchRunner(batched=None, single=cpu_single).run_batch(jobs)   # no batched model: one by one
    """

    def __init__(self, batched: ICompiledModel | None, single: ICompiledModel):
        self._batched = None if batched is None else _Pool(batched)
        self._single = _Pool(single)

    def run_batch(self, jobs: list[Job]) -> None:
        pool = self._batched
        if pool is None:
            for job in jobs:
                self.run_single(job)
            return
        pool.compiled.task_executor().submit(lambda: self._execute(pool, jobs, batched=True))

    def run_single(self, job: Job) -> None:
        self._single.compiled.task_executor().submit(lambda: self._execute(self._single, [job], batched=False))

    @staticmethod
    def _execute(pool: _Pool, jobs: list[Job], batched: bool) -> None:
        request = pool.take()
        try:
            if batched:
                inputs = [np.concatenate([np.asarray(j.inputs[i]) for j in jobs], axis=0)
                          for i in range(len(jobs[0].inputs))]
            else:
                inputs = jobs[0].inputs
            outs = request.infer(inputs)
            # copies: the request's buffers are reused by the next execution once it is back in the pool
            parts = [[np.array(o[k:k + 1] if batched else o, copy=True) for o in outs] for k in range(len(jobs))]
            profile = request.get_profiling_info()
        except BaseException as e:  # noqa: BLE001 - every job of the batch gets the error
            pool.give(request)
            for job in jobs:
                job.done(None, e)
            return
        pool.give(request)
        for job, out in zip(jobs, parts, strict=True):
            job.profile = profile
            job.done(out, None)
