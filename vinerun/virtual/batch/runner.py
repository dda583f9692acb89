"""Runs jobs on the device: a batch on the batched compiled model (each job's inputs copied into its row of the
batch's input arrays, outputs split back), a single job on the unbatched one. Each runs on its compiled model's
executor with a sync request taken from a pool, so batches run on the device's streams in parallel.

The batch input arrays are the request's own where it offers them (``ISyncInferRequest.host_inputs``: a GPU
request's pinned upload buffers, so a row is copied once on its way to the device), else arrays the pool keeps
for that request: either way no batch-sized array is allocated per execution. Each job's outputs are copies of its
rows (its own memory, as each OpenVINO auto-batched request has: the next batch cannot overwrite them).

>>> runner = BatchRunner(batched=cpu_batched_8, single=cpu_single)
>>> runner.run_batch(jobs)        # returns at once; each job's ``done`` is called when its slice is ready
"""

from __future__ import annotations

import queue
from typing import Any

import numpy as np

from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.infer_request import ISyncInferRequest
from vinerun.virtual.batch.batcher import Job


class _Slot:
    """A sync request of a pool and the batch input arrays kept for it (when it offers none of its own)."""

    __slots__ = ("request", "arrays")

    def __init__(self, request: ISyncInferRequest):
        self.request = request
        self.arrays: list[np.ndarray] | None = None


class _Pool:
    """Sync requests of one compiled model, made on demand and reused."""

    def __init__(self, compiled: ICompiledModel):
        self.compiled = compiled
        self._free: queue.SimpleQueue[_Slot] = queue.SimpleQueue()

    def take(self) -> _Slot:
        try:
            return self._free.get_nowait()
        except queue.Empty:
            return _Slot(self.compiled.create_sync_infer_request())

    def give(self, slot: _Slot) -> None:
        self._free.put(slot)


def _fits(arrays: list[Any] | None, like: list[np.ndarray], rows: int) -> bool:
    return arrays is not None and len(arrays) == len(like) and all(
        isinstance(a, np.ndarray) and a.shape == (rows, *x.shape[1:]) and a.dtype == x.dtype
        for a, x in zip(arrays, like, strict=True))


def gather(slot: _Slot, jobs: list[Job]) -> list[Any]:
    """The batch's inputs: job k's input i in row k of input i's array (the request's own, else the slot's)."""
    first = jobs[0].inputs
    if not all(isinstance(x, np.ndarray) and x.shape[:1] == (1,) and x.shape == f.shape and x.dtype == f.dtype
               for job in jobs for x, f in zip(job.inputs, first, strict=True)):
        return [np.concatenate([np.asarray(j.inputs[i]) for j in jobs], axis=0) for i in range(len(first))]
    arrays = slot.request.host_inputs()
    if not _fits(arrays, first, len(jobs)):
        if not _fits(slot.arrays, first, len(jobs)):
            slot.arrays = [np.empty((len(jobs), *x.shape[1:]), x.dtype) for x in first]
        arrays = slot.arrays
    for i, array in enumerate(arrays):  # type: ignore[arg-type] - _fits checked it
        for k, job in enumerate(jobs):
            array[k] = job.inputs[i][0]
    return arrays  # type: ignore[return-value]


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
        slot = pool.take()
        try:
            inputs = gather(slot, jobs) if batched else jobs[0].inputs
            outs = slot.request.infer(inputs)
            # copies: the request's buffers are reused by the next execution once it is back in the pool
            if batched:
                parts = [[np.array(o[k:k + 1], copy=True) for o in outs] for k in range(len(jobs))]
            else:
                parts = [[np.array(o, copy=True) for o in outs]]
            profile = slot.request.get_profiling_info()
        except BaseException as e:  # noqa: BLE001 - every job of the batch gets the error
            pool.give(slot)
            for job in jobs:
                job.done(None, e)
            return
        pool.give(slot)
        for job, out in zip(jobs, parts, strict=True):
            job.profile = profile
            job.done(out, None)
