"""``properties.intel_gpu``: GPU-only keys (``intel_gpu.hint``: the GPU's own hints)."""

from __future__ import annotations

from vinerun.properties._key import BOOL, name_keys, ro, rw
from vinerun.properties.intel_gpu import hint


class MemoryType:
    surface = "GPU_SURFACE"
    buffer = "GPU_BUFFER"


class CapabilityGPU:
    HW_MATMUL = "GPU_HW_MATMUL"
    USM_MEMORY = "GPU_USM_MEMORY"


device_total_mem_size = ro("GPU_DEVICE_TOTAL_MEM_SIZE")
device_max_alloc_mem_size = ro("GPU_DEVICE_MAX_ALLOC_MEM_SIZE")
execution_units_count = ro("GPU_EXECUTION_UNITS_COUNT")
uarch_version = ro("GPU_UARCH_VERSION")
memory_statistics = ro("GPU_MEMORY_STATISTICS")
disable_winograd_convolution = rw("GPU_DISABLE_WINOGRAD_CONVOLUTION", BOOL)
enable_loop_unrolling = rw("GPU_ENABLE_LOOP_UNROLLING", BOOL)

name_keys(globals())

__all__ = ["CapabilityGPU", "MemoryType", "hint"]
