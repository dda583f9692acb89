"""``properties.intel_gna``: GNA-only keys and enums (OpenVINO's ``ov::intel_gna``).

>>> import vinerun.properties as props
>>> props.intel_gna.execution_mode(props.intel_gna.ExecutionMode.SW_FP32)
('GNA_DEVICE_MODE', <ExecutionMode.SW_FP32: 4>)
"""

from __future__ import annotations

from vinerun.properties._key import PropertyEnum, name_keys, ro, rw


class ExecutionMode(PropertyEnum):
    """``GNA_DEVICE_MODE`` values; their strings are ``"GNA_" + name`` (``"GNA_SW_EXACT"``)."""

    AUTO = 0
    HW = 1
    HW_WITH_SW_FBACK = 2
    SW_EXACT = 3
    SW_FP32 = 4


class HWGeneration(PropertyEnum):
    """GNA generations; a config accepts ``GNA_2_0``, ``GNA_3_0``, ``GNA_3_5`` (``GNA_TARGET_2_0``...) or unset."""

    UNDEFINED = 0
    GNA_2_0 = 1
    GNA_3_0 = 2
    GNA_3_5 = 3
    GNA_1_0 = 4
    GNA_3_1 = 5
    GNA_3_5_E = 6
    GNA_3_6 = 7
    GNA_4_0 = 8


class PWLDesignAlgorithm(PropertyEnum):
    UNDEFINED = 0
    RECURSIVE_DESCENT = 1
    UNIFORM_DISTRIBUTION = 2


execution_mode = rw("GNA_DEVICE_MODE")
execution_target = rw("GNA_HW_EXECUTION_TARGET")
compile_target = rw("GNA_HW_COMPILE_TARGET")
scale_factors_per_input = rw("GNA_SCALE_FACTOR_PER_INPUT")
pwl_design_algorithm = rw("GNA_PWL_DESIGN_ALGORITHM")
pwl_max_error_percent = rw("GNA_PWL_MAX_ERROR_PERCENT")
firmware_model_image_path = rw("GNA_FIRMWARE_MODEL_IMAGE")
memory_reuse = rw("GNA_COMPACT_MODE")
library_full_version = ro("GNA_LIBRARY_FULL_VERSION")

name_keys(globals())
