"""``properties.intel_npu``: NPU keys (OpenVINO's ``ov::intel_npu``). vinerun has no NPU device: the keys exist
so code written for OpenVINO imports and builds configs; a device that does not know a key rejects it."""

from __future__ import annotations

from vinerun.properties._key import BOOL, INT64, STR, PropertyEnum, enum_of, name_keys, ro, rw


class CompilerType(PropertyEnum):
    """``NPU_COMPILER_TYPE`` values."""

    PLUGIN = 0
    DRIVER = 1
    PREFER_PLUGIN = 2


device_alloc_mem_size = ro("NPU_DEVICE_ALLOC_MEM_SIZE")
device_total_mem_size = ro("NPU_DEVICE_TOTAL_MEM_SIZE")
driver_version = ro("NPU_DRIVER_VERSION")
compiler_version = ro("NPU_COMPILER_VERSION")
max_tiles = ro("NPU_MAX_TILES")
compilation_mode_params = rw("NPU_COMPILATION_MODE_PARAMS", STR)
compiler_type = rw("NPU_COMPILER_TYPE", enum_of(CompilerType))
platform = rw("NPU_PLATFORM", STR)
enable_strides_for = rw("NPU_ENABLE_STRIDES_FOR", STR)
turbo = rw("NPU_TURBO", BOOL)
tiles = rw("NPU_TILES", INT64)
bypass_umd_caching = rw("NPU_BYPASS_UMD_CACHING", BOOL)
defer_weights_load = rw("NPU_DEFER_WEIGHTS_LOAD", BOOL)
compiler_dynamic_quantization = rw("NPU_COMPILER_DYNAMIC_QUANTIZATION", BOOL)
qdq_optimization = rw("NPU_QDQ_OPTIMIZATION", BOOL)
qdq_optimization_aggressive = rw("NPU_QDQ_OPTIMIZATION_AGGRESSIVE", BOOL)
run_inferences_sequentially = rw("NPU_RUN_INFERENCES_SEQUENTIALLY", BOOL)
disable_idle_memory_prunning = rw("NPU_DISABLE_IDLE_MEMORY_PRUNING", BOOL)

name_keys(globals())
