"""Where AUTO and MULTI send each inference: a :class:`Schedule` hands out a device per inference.

- :class:`Startup` (AUTO, LATENCY/THROUGHPUT hint): one target device. With the start-up fallback,
  the CPU helper is compiled first and serves while the target compiles in a background thread;
  then the target takes over (in-flight CPU inferences finish on CPU).
- :class:`Cumulative` (MULTI, CUMULATIVE_THROUGHPUT hint): every capable device, each with as many
  inferences in flight as its ``OPTIMAL_NUMBER_OF_INFER_REQUESTS``; a job that finds every device full
  waits in a queue for the next free slot. ``SCHEDULE_POLICY`` DEVICE_PRIORITY fills the devices in
  priority order, ROUND_ROBIN takes turns.

``acquire(grant)`` calls ``grant(device)`` now or, when every slot is taken, from the thread that
frees the next one; ``try_acquire()`` returns a device or None at once; ``release(device)`` gives the
slot back. None of them blocks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from vinerun.errors import DeviceError
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.properties.intel_auto import SchedulePolicy

log = logging.getLogger("vinerun")

Grant = Callable[[str], None]
CompileOn = Callable[[str], ICompiledModel]


class Schedule(Protocol):
    #: compiled devices, in priority order
    models: dict[str, ICompiledModel]

    def acquire(self, grant: Grant) -> None: ...
    def try_acquire(self) -> str | None: ...
    def release(self, device: str) -> None: ...
    def execution_devices(self) -> list[str]: ...
    def optimal_requests(self) -> int: ...
    def pending_devices(self) -> set[str]: ...


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def compile_first(owner: str, compile_on: CompileOn, devices: list[str]) -> tuple[str, ICompiledModel]:
    """The first device of ``devices`` that compiles the model; DeviceError with every failure if none."""
    errors: dict[str, str] = {}
    for device in devices:
        try:
            return device, compile_on(device)
        except Exception as e:  # noqa: BLE001 - try the next candidate; all failures are reported
            errors[device] = _describe(e)
            log.warning("%s: compiling on %s failed (%s); trying the next device", owner, device, errors[device])
    raise DeviceError(f"{owner}: the model compiled on none of its devices: "
                      + "; ".join(f"{d}: {e}" for d, e in errors.items()))


def _optimal(model: ICompiledModel) -> int:
    try:
        return max(1, int(model.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
    except Exception:  # noqa: BLE001 - a device without the property runs one at a time
        return 1


class Startup:
    """One target device, optionally with the CPU helper serving until the target is compiled."""

    HELPER = "CPU"

    def __init__(self, owner: str, compile_on: CompileOn, devices: list[str], use_helper: bool):
        self.owner = owner
        self.models: dict[str, ICompiledModel] = {}
        self._lock = threading.Lock()
        #: set when the target is compiled (or its compile gave up); tests and users may wait on it
        self.target_ready = threading.Event()
        self.helper: str | None = None
        self.startup_errors: dict[str, str] = {}
        targets = [d for d in devices if d != self.HELPER]
        self._targets = targets
        if use_helper and targets and self.HELPER in devices and devices[0] != self.HELPER:
            try:
                self.models[self.HELPER] = compile_on(self.HELPER)
                self.helper = self.HELPER
            except Exception as e:  # noqa: BLE001 - no helper then: compile the target in the foreground
                log.warning("%s: the CPU start-up helper failed to compile (%s)", owner, _describe(e))
        if self.helper is None:
            device, model = compile_first(owner, compile_on, devices)
            self.models[device] = model
            self.current = device
            self.target_ready.set()
            return
        self.current = self.HELPER
        self._t0 = time.perf_counter()
        thread = threading.Thread(target=self._compile_target, args=(compile_on, targets),
                                  name=f"{owner}-startup-compile", daemon=True)
        thread.start()

    def _compile_target(self, compile_on: CompileOn, targets: list[str]) -> None:
        for device in targets:
            try:
                model = compile_on(device)
            except Exception as e:  # noqa: BLE001 - logged; the next target or the helper carries on
                self.startup_errors[device] = _describe(e)
                log.warning("%s: compiling on %s failed (%s)", self.owner, device, self.startup_errors[device])
                continue
            with self._lock:
                self.models = {device: model, **self.models}  # the target first: priority order
                self.current = device
            log.info("%s: %s compiled in %.2f s; new inferences run on %s instead of the CPU helper",
                     self.owner, device, time.perf_counter() - self._t0, device)
            self.target_ready.set()
            return
        log.warning("%s: no target device compiled (%s); the CPU helper keeps serving every inference",
                    self.owner, "; ".join(f"{d}: {e}" for d, e in self.startup_errors.items()))
        with self._lock:
            self.helper = None  # CPU is now the device, not a stand-in
        self.target_ready.set()

    def helper_active(self) -> bool:
        return self.helper is not None and self.current == self.helper

    def acquire(self, grant: Grant) -> None:
        grant(self.current)

    def try_acquire(self) -> str | None:
        return self.current

    def release(self, device: str) -> None:
        return None

    def execution_devices(self) -> list[str]:
        return [f"({self.current})"] if self.helper_active() else [self.current]

    def optimal_requests(self) -> int:
        return _optimal(self.models[self.current])

    def pending_devices(self) -> set[str]:
        """Devices still compiling in the background (not usable for runtime fallback yet)."""
        return set() if self.target_ready.is_set() else set(self._targets)


class Cumulative:
    """Every device compiled; each keeps up to its optimal number of inferences in flight."""

    def __init__(self, owner: str, compile_on: CompileOn, devices: list[str], policy: Any):
        self.owner = owner
        self.models: dict[str, ICompiledModel] = {}
        errors: dict[str, str] = {}
        for device in devices:
            try:
                self.models[device] = compile_on(device)
            except Exception as e:  # noqa: BLE001 - MULTI runs on the devices that compiled
                errors[device] = _describe(e)
                log.warning("%s: compiling on %s failed (%s); running without it", owner, device, errors[device])
        if not self.models:
            raise DeviceError(f"{owner}: the model compiled on none of its devices: "
                              + "; ".join(f"{d}: {e}" for d, e in errors.items()))
        self.round_robin = policy == SchedulePolicy.ROUND_ROBIN
        self.capacity = {d: _optimal(m) for d, m in self.models.items()}
        self.busy = dict.fromkeys(self.models, 0)
        self._order = list(self.models)
        self._next = 0
        self._waiting: deque[Grant] = deque()
        self._lock = threading.Lock()

    def _pick(self) -> str | None:
        n = len(self._order)
        start = self._next if self.round_robin else 0
        for k in range(n):
            device = self._order[(start + k) % n]
            if self.busy[device] < self.capacity[device]:
                if self.round_robin:
                    self._next = (start + k + 1) % n
                return device
        return None

    def acquire(self, grant: Grant) -> None:
        with self._lock:
            device = self._pick()
            if device is None:
                self._waiting.append(grant)
                return
            self.busy[device] += 1
        grant(device)

    def try_acquire(self) -> str | None:
        """A device with a free slot (now taken), or None without waiting."""
        with self._lock:
            device = self._pick()
            if device is not None:
                self.busy[device] += 1
            return device

    def release(self, device: str) -> None:
        with self._lock:
            if not self._waiting:
                self.busy[device] -= 1
                return
            grant = self._waiting.popleft()  # the freed slot goes straight to the oldest waiting job
        grant(device)

    def execution_devices(self) -> list[str]:
        return list(self.models)

    def optimal_requests(self) -> int:
        return sum(self.capacity.values())

    def pending_devices(self) -> set[str]:
        return set()
