"""Low-precision transformations (OpenVINO's LPT for the forms quantized models come in): FakeQuantize to
Q/DQ, dequantization moved through precision-preserving ops, and int8 Convolution / MatMul fusion.

>>> low_precision()(model)  # doctest: +SKIP
"""

from vinerun.transformations.low_precision.fake_quantize import FakeQuantizeDecomposition
from vinerun.transformations.low_precision.fuse import LowPrecisionFusion
from vinerun.transformations.low_precision.ops import QuantizedConvolution, QuantizedLayer, QuantizedMatMul, Stage
from vinerun.transformations.low_precision.params import Quantization, Weights
from vinerun.transformations.low_precision.propagate import DequantizationPropagation
from vinerun.transformations.low_precision.roundtrip import QuantizeDequantizeToFakeQuantize
from vinerun.transformations.low_precision.signed import SignedRuntimeWeights
from vinerun.transformations.pass_infra import PassManager


def low_precision() -> PassManager:
    """The low-precision pipeline a device with int8 kernels runs before its other fusions."""
    return PassManager([FakeQuantizeDecomposition(), DequantizationPropagation(), LowPrecisionFusion(),
                        SignedRuntimeWeights(), QuantizeDequantizeToFakeQuantize()])


__all__ = ["DequantizationPropagation", "FakeQuantizeDecomposition", "LowPrecisionFusion", "Quantization",
           "QuantizeDequantizeToFakeQuantize", "QuantizedConvolution", "QuantizedLayer", "QuantizedMatMul",
           "SignedRuntimeWeights", "Stage", "Weights", "low_precision"]
