"""``ISyncInferRequest``: runs a compiled model once; ``ProfilingInfo``: per-node counters."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import timedelta
from enum import IntEnum
from typing import Any


class Status(IntEnum):
    """``ProfilingInfo.Status`` as OpenVINO's: an integer enum (0, 1, 2) printed ``Status.EXECUTED``."""

    NOT_RUN = 0
    OPTIMIZED_OUT = 1
    EXECUTED = 2

    def __str__(self) -> str:
        return f"Status.{self.name}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


@dataclass
class ProfilingInfo:
    """One node's counters, as in OpenVINO: ``status`` is ``Status.EXECUTED``, ``NOT_RUN`` or ``OPTIMIZED_OUT``
    (devices may give its name)."""

    node_name: str = ""
    node_type: str = ""
    exec_type: str = ""
    status: Status = Status.NOT_RUN
    real_time: timedelta = field(default_factory=timedelta)
    cpu_time: timedelta = field(default_factory=timedelta)

    Status = Status  # ov.ProfilingInfo.Status.EXECUTED

    def __post_init__(self) -> None:
        if isinstance(self.status, str):
            self.status = Status[self.status]


class ISyncInferRequest(ABC):
    """Device side of an infer request: arrays in (one per model input), arrays out."""

    @abstractmethod
    def infer(self, inputs: list[Any]) -> list[Any]:
        """Run once; ``inputs`` are host arrays in model-input order; returns one value per output."""

    def host_inputs(self) -> list[Any] | None:
        """Host arrays, one per model input, that the next ``infer`` reads in place when given them as its
        inputs (e.g. a GPU request's pinned upload buffers), or None. A caller that gathers its inputs (BATCH)
        writes them there, saving a copy; they are the request's: valid until its next ``infer``."""
        return None

    def cancel(self) -> None:
        """Asked to stop the inference in flight (from another thread); devices that can, stop early."""
        return None

    def get_profiling_info(self) -> list[ProfilingInfo]:
        return []

    def query_state(self) -> list[Any]:
        return []

    def reset_state(self) -> None:
        for s in self.query_state():
            s.reset()
