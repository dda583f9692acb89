"""vinerun: a multi-device neural-network inference runtime with OpenVINO's Python API.

>>> import vinerun as ov
>>> core = ov.Core()
>>> compiled = core.compile_model("model.onnx", "CPU")
>>> result = compiled({"input": x})
"""

from vinerun._version import __version__
from vinerun.ir import Dimension, Layout, Model, Node, Output, PartialShape, Shape, Tensor, Type
from vinerun.ir.node import Input
from vinerun.plugin_api.infer_request import ProfilingInfo
from vinerun.runtime import CompiledModel, Core, InferRequest, compile_model, save_model, serialize

ConstOutput = Output


def get_version() -> str:
    """The runtime version string."""
    return __version__


__all__ = ["CompiledModel", "ConstOutput", "Core", "Dimension", "InferRequest", "Input", "Layout", "Model",
           "Node", "Output", "PartialShape", "ProfilingInfo", "Shape", "Tensor", "Type", "__version__",
           "compile_model", "get_version", "save_model", "serialize"]
