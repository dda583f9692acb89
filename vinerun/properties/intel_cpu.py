"""``properties.intel_cpu``: CPU-only keys."""

from __future__ import annotations

from vinerun.properties._key import PropertyEnum, rw


class TbbPartitioner(PropertyEnum):
    STATIC = 1
    AUTO = 2


denormals_optimization = rw("CPU_DENORMALS_OPTIMIZATION")
sparse_weights_decompression_rate = rw("CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE")
tbb_partitioner = rw("TBB_PARTITIONER")
