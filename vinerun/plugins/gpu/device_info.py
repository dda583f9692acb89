"""Facts about a GPU, as OpenVINO's GPU plugin reports them, read from PyTorch."""

from __future__ import annotations

import uuid

from vinerun.plugins.gpu.backend import GpuDevice, devices


def full_name(device: GpuDevice) -> str:
    """e.g. ``"NVIDIA H100 80GB HBM3 (dGPU)"``, as OpenVINO names Intel GPUs ``"Intel(R) Arc(TM) ... (dGPU)"``."""
    p = device.properties()
    if p is None:
        return "PyTorch CPU stand-in (test only)"
    return f"{p.name} ({'iGPU' if integrated(device) else 'dGPU'})"


def integrated(device: GpuDevice) -> bool:
    p = device.properties()
    return bool(getattr(p, "is_integrated", False)) if p is not None else True


def architecture(device: GpuDevice) -> str:
    """``GPU: vendor=0x10de arch=sm_90`` style: the compute capability on CUDA, the device name on XPU."""
    p = device.properties()
    if device.kind == "cuda":
        return f"GPU: vendor=0x10de arch=sm_{p.major}{p.minor}"
    if device.kind == "xpu":
        return f"GPU: vendor=0x8086 arch={getattr(p, 'name', 'xpu')}"
    return "GPU: stand-in"


def device_uuid(device: GpuDevice) -> str:
    """The device's UUID (hex, no dashes), as ``DEVICE_UUID``; a name-derived one where PyTorch has none."""
    p = device.properties()
    raw = getattr(p, "uuid", None)
    if raw is not None:
        return uuid.UUID(str(raw)).hex if not isinstance(raw, bytes) else raw.hex()
    return uuid.uuid5(uuid.NAMESPACE_DNS, f"{device.kind}{device.index}{getattr(p, 'name', '')}").hex


def total_memory(device: GpuDevice) -> int:
    p = device.properties()
    if p is None:
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return int(p.total_memory)


def execution_units(device: GpuDevice) -> int:
    """Streaming multiprocessors (CUDA) or Xe cores (XPU): OpenVINO's ``GPU_EXECUTION_UNITS_COUNT``."""
    p = device.properties()
    if p is None:
        return 1
    return int(getattr(p, "multi_processor_count", 0) or getattr(p, "gpu_eu_count", 0) or 1)


def capabilities(device: GpuDevice) -> list[str]:
    caps = ["FP32", "FP16", "INT8", "BATCHED_BLOB", "EXPORT_IMPORT"]
    p = device.properties()
    if device.kind == "cpu" or (device.kind == "cuda" and p.major >= 8) or device.kind == "xpu":
        caps.insert(2, "BF16")
    return caps


def memory_statistics(device: GpuDevice) -> dict[str, int]:
    """``GPU_MEMORY_STATISTICS``: bytes in use and reserved by this process on the device."""
    if device.kind == "cuda":
        import torch

        return {"usm_device": int(torch.cuda.memory_allocated(device.index)),
                "usm_device_reserved": int(torch.cuda.memory_reserved(device.index)),
                "usm_device_peak": int(torch.cuda.max_memory_allocated(device.index))}
    return {"usm_device": 0}


def available_ids() -> list[str]:
    return [str(d.index) for d in devices()]
