"""The GPUs PyTorch can run on: CUDA (NVIDIA, ROCm builds too) and XPU (Intel Arc / Flex / Max).

``devices()`` lists them in order (``GPU.0``, ``GPU.1``, ...). On a machine without a GPU backend the list is
empty and the Core does not list ``GPU``. Tests of the machine-independent parts run the same plans on
PyTorch's CPU device through :func:`stand_in` (a context manager, test-only: never listed to users).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class GpuDevice:
    """One GPU as PyTorch sees it: ``kind`` "cuda", "xpu", or "cpu" for the test-only stand-in."""

    kind: str
    index: int

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.kind, self.index) if self.kind != "cpu" else torch.device("cpu")

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    def properties(self) -> Any:
        """PyTorch's device properties (name, total_memory, multi_processor_count, ...); None for the stand-in."""
        if self.kind == "cuda":
            return torch.cuda.get_device_properties(self.index)
        if self.kind == "xpu":
            return torch.xpu.get_device_properties(self.index)
        return None

    def synchronize(self) -> None:
        if self.kind == "cuda":
            torch.cuda.synchronize(self.index)
        elif self.kind == "xpu":
            torch.xpu.synchronize(self.index)


_stand_in: list[GpuDevice] = []


@functools.cache
def _hardware() -> tuple[GpuDevice, ...]:
    found: list[GpuDevice] = []
    try:
        if torch.cuda.is_available():
            found += [GpuDevice("cuda", i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - a broken driver means no CUDA device, not a failed import
        pass
    xpu = getattr(torch, "xpu", None)
    try:
        if xpu is not None and xpu.is_available():
            found += [GpuDevice("xpu", i) for i in range(xpu.device_count())]
    except Exception:  # noqa: BLE001
        pass
    return tuple(found)


def devices() -> list[GpuDevice]:
    """The GPUs of this machine (or the stand-in's one, inside :func:`stand_in`)."""
    return list(_stand_in) if _stand_in else list(_hardware())


def has_gpu() -> bool:
    """Whether a real GPU backend is present (the stand-in does not count)."""
    return bool(_hardware())


@contextlib.contextmanager
def stand_in() -> Iterator[GpuDevice]:
    """Test-only: inside, ``GPU`` is one device that runs its plans on PyTorch's CPU device."""
    device = GpuDevice("cpu", 0)
    _stand_in.append(device)
    try:
        yield device
    finally:
        _stand_in.remove(device)


def device_for(device_id: str) -> GpuDevice:
    """The device ``DEVICE_ID`` names ("", "0", "1", ... or "GPU.1"); errors list the devices there are."""
    from vinerun.errors import DeviceError

    found = devices()
    if not found:
        raise DeviceError("GPU: no GPU backend in this PyTorch (torch.cuda / torch.xpu report no device); "
                          "use CPU, or install a PyTorch build with CUDA or XPU")
    key = str(device_id).upper().removeprefix("GPU").lstrip(".") or "0"
    if not key.isdigit() or int(key) >= len(found):
        raise DeviceError(f"GPU: there is no device '{device_id}'; devices: "
                          f"{', '.join(f'GPU.{i}' for i in range(len(found)))}")
    return found[int(key)]
