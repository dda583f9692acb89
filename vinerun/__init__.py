"""vinerun: a multi-device neural-network inference runtime with OpenVINO's Python API.

>>> import vinerun as ov
>>> core = ov.Core()
>>> compiled = core.compile_model("model.onnx", "CPU")
>>> result = compiled({"input": x})
"""

import sys as _sys

from vinerun import _bindings as _pyopenvino  # OpenVINO's openvino._pyopenvino module (see the end)
from vinerun import (  # noqa: F401  (OpenVINO's ov.op and ov.opsetN op builders)
    helpers,
    layout_helpers,
    op,
    opset1,
    opset2,
    opset3,
    opset4,
    opset5,
    opset6,
    opset7,
    opset8,
    opset9,
    opset10,
    opset11,
    opset12,
    opset13,
    opset14,
    opset15,
    opset16,
    preprocess,
    properties,
    utils,
)
from vinerun._version import __version__
from vinerun.helpers import tensor_from_file
from vinerun.ir import Dimension, Layout, Model, Node, Output, PartialShape, Shape, Tensor, Type
from vinerun.ir.coordinates import AxisSet, AxisVector, Coordinate, CoordinateDiff, Strides
from vinerun.ir.node import ConstOutput, DiscreteTypeInfo, Input
from vinerun.ir.rt_map import OVAny, RTMap
from vinerun.ir.symbol import Symbol
from vinerun.plugin_api.infer_request import ProfilingInfo
from vinerun.plugin_api.variable_state import VariableState
from vinerun.preprocess import get_batch, set_batch
from vinerun.quantization import (
    AdvancedAccuracyRestorerParameters,
    AdvancedQuantizationParameters,
    CompressWeightsMode,
    Dataset,
    DropType,
    IgnoredScope,
    ModelType,
    QuantizationPreset,
    TargetDevice,
    compress_weights,
    quantize,
    quantize_with_accuracy_control,
)
from vinerun.runtime import (
    AsyncInferQueue,
    CompiledModel,
    Core,
    InferRequest,
    compile_model,
    save_model,
    serialize,
)
from vinerun.runtime.extension import Extension
from vinerun.runtime.remote import RemoteContext, RemoteTensor


def get_version() -> str:
    """The runtime version string."""
    return __version__


__all__ = ["CompiledModel", "ConstOutput", "Core", "Dimension", "InferRequest", "Input", "Layout", "Model",
           "Node", "Output", "PartialShape", "ProfilingInfo", "Shape", "Tensor", "Type", "__version__",
           "compile_model", "get_version", "save_model", "serialize"]
__all__ += ["VariableState", "get_batch", "preprocess", "set_batch"]
__all__ += ["AsyncInferQueue", "properties"]
__all__ += ["AxisSet", "AxisVector", "Coordinate", "CoordinateDiff", "DiscreteTypeInfo", "Strides",
            "layout_helpers"]
__all__ += ["OVAny", "RTMap", "Symbol"]
__all__ += ["Extension", "RemoteContext", "RemoteTensor", "helpers", "tensor_from_file"]
# post-training quantization, in the spirit of NNCF's nncf.quantize / quantize_with_accuracy_control /
# nncf.compress_weights
__all__ += ["AdvancedAccuracyRestorerParameters", "AdvancedQuantizationParameters", "CompressWeightsMode", "Dataset",
            "DropType", "IgnoredScope", "ModelType", "QuantizationPreset", "TargetDevice", "compress_weights",
            "quantize", "quantize_with_accuracy_control"]

# ``import vinerun._pyopenvino`` (OpenVINO's binding module name) finds the module defined in _bindings.py
_sys.modules.setdefault(__name__ + "._pyopenvino", _pyopenvino)
