"""``IRequestLoop``: a device's own loop for an ``AsyncInferQueue``'s requests.

A device whose requests can run without Python (the CPU, for a model that is one native segment: see
:mod:`vinerun.plugins.cpu.request_loop`) offers one through :meth:`ICompiledModel.request_loop`. The queue
then takes an idle slot, puts the inputs into that slot's request tensors and submits the slot with its input
and output arrays; the device's stream threads run it and write the outputs into those arrays, without the GIL.
The queue's ``hook(slot, status)`` runs on the stream thread (with the GIL) only where asked: a job that needs
Python (``RUN_IN_PYTHON``: the hook runs the request itself) or one whose result a callback wants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

#: statuses a hook gets: the run succeeded; the hook is to run the request in Python
NOT_FAILED, RUN_IN_PYTHON = -1, -3

Hook = Callable[[int, int], None]


class IRequestLoop(Protocol):
    """Slots (one per request of the queue) run by the device's stream threads."""

    def take(self) -> int:
        """The slot idle longest, now reserved for the caller (waits, without the GIL, while none is idle)."""

    def release(self, slot: int) -> None:
        """Give a taken slot back unused."""

    def submit(self, slot: int, inputs: list[Any], outputs: list[np.ndarray] | None, notify: bool) -> None:
        """Run a taken slot on ``inputs`` (model-input order), writing into ``outputs`` (model-output order;
        None: the hook runs it in Python); ``notify``: call the hook when it is done."""

    def wait(self, slot: int = -1, timeout: float | None = None) -> bool:
        """Until ``slot`` (-1: every slot) is neither queued nor running, at most ``timeout`` seconds (None: no
        limit); whether it is."""

    def failures(self) -> list[tuple[int, BaseException]]:
        """The slots whose run failed (and whose hook was not called) since the last call, with their errors."""

    def error(self, status: int) -> BaseException:
        """The error of a run that ended with ``status`` (neither ``NOT_FAILED`` nor ``RUN_IN_PYTHON``)."""

    def latency(self, slot: int) -> float:
        """Milliseconds from the slot's last submission to the end of its run."""

    def idle(self) -> int:
        """How many slots are idle."""

    def close(self) -> None:
        """Stop serving once the queued slots have run (does not wait)."""
