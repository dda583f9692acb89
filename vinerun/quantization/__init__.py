"""Post-training quantization and weight compression, in the spirit of NNCF's API.

>>> import vinerun as ov
>>> ov.QuantizationPreset.PERFORMANCE.value, ov.CompressWeightsMode.INT4_SYM.value
('performance', 'int4_sym')

``quantize`` places FakeQuantize nodes (8-bit activations and weights) from calibration statistics;
``quantize_with_accuracy_control`` then returns the quantizers that cost the most accuracy to float until a
metric is within ``max_drop`` of the float model's; ``compress_weights`` stores MatMul / embedding weights as
u8 / i8 / u4 / i4 with a decompression subgraph.
"""

from vinerun.quantization.accuracy_control import AccuracyControlReport, quantize_with_accuracy_control
from vinerun.quantization.compress_weights import compress_weights
from vinerun.quantization.dataset import Dataset
from vinerun.quantization.parameters import (
    AdvancedAccuracyRestorerParameters,
    AdvancedQuantizationParameters,
    CompressWeightsMode,
    DropType,
    IgnoredScope,
    ModelType,
    QuantizationError,
    QuantizationPreset,
    RangeEstimator,
    RankingMode,
    TargetDevice,
)
from vinerun.quantization.quantize import quantize

__all__ = ["AccuracyControlReport", "AdvancedAccuracyRestorerParameters", "AdvancedQuantizationParameters",
           "CompressWeightsMode", "Dataset", "DropType", "IgnoredScope", "ModelType", "QuantizationError",
           "QuantizationPreset", "RangeEstimator", "RankingMode", "TargetDevice", "compress_weights", "quantize",
           "quantize_with_accuracy_control"]
