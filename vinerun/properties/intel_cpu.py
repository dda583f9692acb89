"""``properties.intel_cpu``: CPU-only keys."""

from __future__ import annotations

from vinerun.properties._key import BOOL, FLOAT32, PropertyEnum, enum_of, name_keys, rw


class TbbPartitioner(PropertyEnum):
    STATIC = 1
    AUTO = 2


denormals_optimization = rw("CPU_DENORMALS_OPTIMIZATION", BOOL)
sparse_weights_decompression_rate = rw("CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE", FLOAT32)
tbb_partitioner = rw("TBB_PARTITIONER", enum_of(TbbPartitioner))

name_keys(globals())
