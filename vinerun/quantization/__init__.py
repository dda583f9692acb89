"""Post-training quantization and weight compression, in the spirit of NNCF's API.

>>> import vinerun as ov
>>> ov.QuantizationPreset.PERFORMANCE.value, ov.CompressWeightsMode.INT4_SYM.value
('performance', 'int4_sym')

``quantize`` places FakeQuantize nodes (8-bit activations and weights) from calibration statistics;
``compress_weights`` stores MatMul / embedding weights as u8 / i8 / u4 / i4 with a decompression subgraph.
"""

from vinerun.quantization.compress_weights import compress_weights
from vinerun.quantization.dataset import Dataset
from vinerun.quantization.parameters import (
    AdvancedQuantizationParameters,
    CompressWeightsMode,
    IgnoredScope,
    ModelType,
    QuantizationError,
    QuantizationPreset,
    RangeEstimator,
    TargetDevice,
)
from vinerun.quantization.quantize import quantize

__all__ = ["AdvancedQuantizationParameters", "CompressWeightsMode", "Dataset", "IgnoredScope", "ModelType",
           "QuantizationError", "QuantizationPreset", "RangeEstimator", "TargetDevice", "compress_weights",
           "quantize"]
