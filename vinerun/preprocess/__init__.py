"""Pre- and post-processing built into the model as ordinary ops (OpenVINO's ``openvino.preprocess``).

>>> from vinerun.preprocess import PrePostProcessor, ColorFormat, ResizeAlgorithm
>>> ppp = PrePostProcessor(model)
>>> ppp.input().tensor().set_element_type(Type.u8).set_layout(Layout("NHWC")).set_color_format(ColorFormat.BGR)
>>> ppp.input().preprocess().convert_element_type(Type.f32).convert_color(ColorFormat.RGB).scale(255.0)
>>> ppp.input().model().set_layout(Layout("NCHW"))
>>> model = ppp.build()
"""

from vinerun._version import __version__
from vinerun.preprocess.batch import get_batch, set_batch
from vinerun.preprocess.info import (
    ColorFormat,
    InputInfo,
    InputModelInfo,
    InputTensorInfo,
    OutputInfo,
    OutputModelInfo,
    OutputTensorInfo,
    PaddingMode,
    PostProcessSteps,
    PreProcessSteps,
    ResizeAlgorithm,
)
from vinerun.preprocess.processor import PrePostProcessor


def get_version() -> str:
    """The runtime version string (OpenVINO's ``openvino.preprocess.get_version``)."""
    return __version__


__all__ = ["ColorFormat", "InputInfo", "InputModelInfo", "InputTensorInfo", "OutputInfo", "OutputModelInfo",
           "OutputTensorInfo", "PaddingMode", "PostProcessSteps", "PrePostProcessor", "PreProcessSteps",
           "ResizeAlgorithm", "get_batch", "get_version", "set_batch"]
