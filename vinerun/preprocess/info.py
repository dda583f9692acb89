"""What a user declares for one input or output: tensor / model info and the steps, recorded in order.

These classes only record (each setter returns ``self`` so calls chain, as in OpenVINO);
:mod:`vinerun.preprocess.build` turns the records into ops when ``PrePostProcessor.build()`` runs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

from vinerun.ir.layout import Layout
from vinerun.ir.node import Output
from vinerun.ir.shape import PartialShape, as_partial_shape
from vinerun.ir.tensor import Tensor
from vinerun.ir.types import Type


class ColorFormat(enum.Enum):
    """Pixel formats of an input tensor (``ColorFormat.NV12_SINGLE_PLANE``...)."""

    UNDEFINED = 0
    NV12_SINGLE_PLANE = 1
    NV12_TWO_PLANES = 2
    I420_SINGLE_PLANE = 3
    I420_THREE_PLANES = 4
    RGB = 5
    BGR = 6
    GRAY = 7
    RGBX = 8
    BGRX = 9


class ResizeAlgorithm(enum.Enum):
    """``resize()`` algorithms; the Pillow-compatible ones are not implemented in vinerun."""

    RESIZE_LINEAR = 0
    RESIZE_CUBIC = 1
    RESIZE_NEAREST = 2
    RESIZE_BILINEAR_PILLOW = 3
    RESIZE_BICUBIC_PILLOW = 4


class PaddingMode(enum.Enum):
    """``pad()`` modes."""

    CONSTANT = 0
    EDGE = 1
    REFLECT = 2
    SYMMETRIC = 3


def _layout(value: Layout | str) -> Layout:
    return value if isinstance(value, Layout) else Layout(value)


#: one recorded step: (name, arguments)
Step = tuple[str, tuple[Any, ...]]


class InputTensorInfo:
    """What the user will pass: element type, layout, shape, color format."""

    def __init__(self) -> None:
        self.element_type: Type | None = None
        self.layout: Layout | None = None
        self.shape: PartialShape | None = None
        self.spatial: tuple[Any, Any] | None = None  # (h, w); -1 for dynamic
        self.color_format = ColorFormat.UNDEFINED
        self.sub_names: list[str] = []
        self.memory_type = ""

    def set_element_type(self, element_type: Type | Any) -> InputTensorInfo:
        self.element_type = Type(element_type)
        return self

    def set_layout(self, layout: Layout | str) -> InputTensorInfo:
        self.layout = _layout(layout)
        return self

    def set_shape(self, shape: Any) -> InputTensorInfo:
        self.shape = as_partial_shape(shape)
        return self

    def set_spatial_static_shape(self, height: int, width: int) -> InputTensorInfo:
        self.spatial = (int(height), int(width))
        return self

    def set_spatial_dynamic_shape(self) -> InputTensorInfo:
        self.spatial = (-1, -1)
        return self

    def set_color_format(self, color_format: ColorFormat, sub_names: Sequence[str] = ()) -> InputTensorInfo:
        self.color_format = color_format
        self.sub_names = list(sub_names)
        return self

    def set_memory_type(self, memory_type: str) -> InputTensorInfo:
        self.memory_type = memory_type  # host memory only: recorded, nothing to do
        return self

    def set_from(self, tensor: Tensor | Any) -> InputTensorInfo:
        """Element type and shape from an example tensor or array."""
        t = tensor if isinstance(tensor, Tensor) else Tensor(tensor, shared_memory=True)
        return self.set_element_type(t.element_type).set_shape(list(t.shape))


class _Steps:
    """Records steps in order; every method returns ``self``."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def _add(self, name: str, *args: Any) -> Any:
        self.steps.append((name, args))
        return self

    def convert_element_type(self, element_type: Type | Any = None) -> Any:
        """Convert; without an argument, to the model's element type."""
        return self._add("convert_element_type", None if element_type is None else Type(element_type))

    def convert_layout(self, dst: Layout | str | Sequence[int] | None = None) -> Any:
        """Transpose to ``dst`` (a layout, or a permutation); without it, to the model's layout."""
        if dst is not None and not isinstance(dst, (Layout, str)):
            return self._add("convert_layout", [int(d) for d in dst])
        return self._add("convert_layout", None if dst is None else _layout(dst))

    def custom(self, fn: Callable[[Output], Any]) -> Any:
        """``fn(output) -> node or output``: any ops of the user's."""
        return self._add("custom", fn)


class PreProcessSteps(_Steps):
    """Steps applied to an input, in the order they are declared."""

    def convert_color(self, dst: ColorFormat) -> PreProcessSteps:
        return self._add("convert_color", dst)

    def resize(self, algorithm: ResizeAlgorithm, height: int | None = None,
               width: int | None = None) -> PreProcessSteps:
        """Resize H and W to ``height`` x ``width`` (default: the model's spatial size)."""
        return self._add("resize", algorithm, height, width)

    def mean(self, value: float | Sequence[float]) -> PreProcessSteps:
        """Subtract a value, or one value per channel (needs a layout with ``C``)."""
        return self._add("mean", value)

    def scale(self, value: float | Sequence[float]) -> PreProcessSteps:
        """Divide by a value, or one value per channel (needs a layout with ``C``)."""
        return self._add("scale", value)

    def reverse_channels(self) -> PreProcessSteps:
        return self._add("reverse_channels")

    def crop(self, begin: Sequence[int], end: Sequence[int]) -> PreProcessSteps:
        return self._add("crop", list(begin), list(end))

    def pad(self, pads_begin: Sequence[int], pads_end: Sequence[int], value: float,
            mode: PaddingMode = PaddingMode.CONSTANT) -> PreProcessSteps:
        return self._add("pad", list(pads_begin), list(pads_end), float(value), mode)


class PostProcessSteps(_Steps):
    """Steps applied to an output, in the order they are declared."""


class ModelInfo:
    """What the model expects (input) or produces (output): its layout."""

    def __init__(self) -> None:
        self.layout: Layout | None = None

    def set_layout(self, layout: Layout | str) -> ModelInfo:
        self.layout = _layout(layout)
        return self


InputModelInfo = OutputModelInfo = ModelInfo


class OutputTensorInfo:
    """What the user gets back: element type and layout."""

    def __init__(self) -> None:
        self.element_type: Type | None = None
        self.layout: Layout | None = None

    def set_element_type(self, element_type: Type | Any) -> OutputTensorInfo:
        self.element_type = Type(element_type)
        return self

    def set_layout(self, layout: Layout | str) -> OutputTensorInfo:
        self.layout = _layout(layout)
        return self


class InputInfo:
    """``ppp.input(...)``: ``tensor()``, ``preprocess()``, ``model()``."""

    def __init__(self) -> None:
        self._tensor, self._steps, self._model = InputTensorInfo(), PreProcessSteps(), ModelInfo()

    def tensor(self) -> InputTensorInfo:
        return self._tensor

    def preprocess(self) -> PreProcessSteps:
        return self._steps

    def model(self) -> ModelInfo:
        return self._model


class OutputInfo:
    """``ppp.output(...)``: ``tensor()``, ``postprocess()``, ``model()``."""

    def __init__(self) -> None:
        self._tensor, self._steps, self._model = OutputTensorInfo(), PostProcessSteps(), ModelInfo()

    def tensor(self) -> OutputTensorInfo:
        return self._tensor

    def postprocess(self) -> PostProcessSteps:
        return self._steps

    def model(self) -> ModelInfo:
        return self._model
