"""What a user declares for one input or output: tensor / model info and the steps, recorded in order.

These classes only record (each setter returns ``self`` so calls chain, as in OpenVINO);
:mod:`vinerun.preprocess.build` turns the records into ops when ``PrePostProcessor.build()`` runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vinerun.ir.layout import Layout, apply_permutation, as_layout
from vinerun.ir.node import Output
from vinerun.ir.shape import Dimension, PartialShape, as_partial_shape
from vinerun.ir.tensor import Tensor
from vinerun.ir.types import Type
from vinerun.preprocess import steps as st
from vinerun.preprocess.steps import Action, ColorFormat, PaddingMode, ResizeAlgorithm

__all__ = ["ColorFormat", "InputInfo", "InputModelInfo", "InputTensorInfo", "OutputInfo", "OutputModelInfo",
           "OutputTensorInfo", "PaddingMode", "PostProcessSteps", "PreProcessSteps", "ResizeAlgorithm"]


def _type(value: Any) -> Type:
    return value if isinstance(value, Type) else Type(value)


def _floats(value: float | Sequence[float]) -> list[float]:
    if isinstance(value, (int, float, np.number)):
        return [float(np.float32(value))]
    return [float(np.float32(v)) for v in value]


class InputTensorInfo:
    """What the user will pass: element type, layout, shape, color format, memory type."""

    def __init__(self) -> None:
        self.element_type: Type | None = None
        self.layout: Layout | None = None
        self.shape: PartialShape | None = None
        self.spatial: tuple[int, int] | None = None  # (h, w); (-1, -1): dynamic
        self.color_format = ColorFormat.UNDEFINED
        self.sub_names: list[str] = []
        self.memory_type: str | None = None

    def set_element_type(self, type: Type | Any) -> InputTensorInfo:  # noqa: A002 (OpenVINO's keyword)
        self.element_type = _type(type)
        return self

    def set_layout(self, layout: Layout | str) -> InputTensorInfo:
        self.layout = as_layout(layout)
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

    def set_color_format(self, format: ColorFormat, sub_names: Sequence[str] = ()) -> InputTensorInfo:  # noqa: A002
        self.color_format = format
        self.sub_names = list(sub_names)
        return self

    def set_memory_type(self, memory_type: str) -> InputTensorInfo:
        """Recorded in the new Parameter's output rt_info (``memory_type``); vinerun keeps tensors in host memory."""
        self.memory_type = str(memory_type)
        return self

    def set_from(self, runtime_tensor: Tensor | Any) -> InputTensorInfo:
        """Element type and shape from an example tensor or NumPy array."""
        t = runtime_tensor if isinstance(runtime_tensor, Tensor) else Tensor(np.ascontiguousarray(runtime_tensor))
        return self.set_element_type(t.element_type).set_shape(list(t.shape))


class PreProcessSteps:
    """Steps applied to an input, in the order they are declared."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        # for the shape of the user's tensor: permutations by index, last first (OpenVINO's m_layout_converts)
        self._layout_converts: list[list[int]] = []
        # for the model layout implied by the tensor layout: the last explicit convert_layout and those after it
        self._forward_converts: list[list[int]] = []
        self._last_layout: Layout | None = None

    def _add(self, action: Action) -> PreProcessSteps:
        self.actions.append(action)
        return self

    def mean(self, value: float | Sequence[float]) -> PreProcessSteps:
        """Subtract a value, or one value per channel (needs a layout with ``C``)."""
        return self._add(st.mean(_floats(value)))

    def scale(self, value: float | Sequence[float]) -> PreProcessSteps:
        """Divide by a value, or one value per channel (needs a layout with ``C``)."""
        return self._add(st.scale(_floats(value)))

    def convert_element_type(self, type: Type | Any = None) -> PreProcessSteps:  # noqa: A002
        """Convert; without an argument, to the model's element type."""
        return self._add(st.convert_element_type(Type.dynamic if type is None else _type(type)))

    def convert_layout(self, dst_layout: Layout | str | Sequence[int] | None = None) -> PreProcessSteps:
        """Transpose to ``dst_layout`` (a layout, or a permutation of dimension indices); an empty layout or none:
        to the model's layout."""
        if dst_layout is not None and not isinstance(dst_layout, (Layout, str)):
            dims = [int(d) for d in dst_layout]
            if not dims:
                return self
            apply_permutation(Layout(), dims)  # checks the permutation now, as OpenVINO
            self._layout_converts.insert(0, dims)
            self._forward_converts.append(dims)
            return self._add(st.convert_layout_dims(dims))
        layout = Layout() if dst_layout is None else as_layout(dst_layout)
        self._forward_converts.clear()
        self._last_layout = layout
        return self._add(st.convert_layout(layout))

    def convert_color(self, dst_format: ColorFormat) -> PreProcessSteps:
        return self._add(st.convert_color(dst_format))

    def resize(self, alg: ResizeAlgorithm, dst_height: int | None = None, dst_width: int | None = None
               ) -> PreProcessSteps:
        """Resize H and W to ``dst_height`` x ``dst_width`` (without them: to the model's spatial size)."""
        if (dst_height is None) != (dst_width is None):
            raise TypeError("resize() takes both dst_height and dst_width, or neither")
        if dst_height is None:
            return self._add(st.resize(alg, -1, -1))
        if min(int(dst_height), int(dst_width)) < 0:
            raise TypeError("resize(): dst_height and dst_width must be non-negative")
        if max(int(dst_height), int(dst_width)) > 2**31 - 1:
            raise RuntimeError("Resize: Width/Height dimensions cannot be greater than 2147483647")
        return self._add(st.resize(alg, int(dst_height), int(dst_width)))

    def crop(self, begin: Sequence[int], end: Sequence[int]) -> PreProcessSteps:
        return self._add(st.crop([int(v) for v in begin], [int(v) for v in end]))

    def pad(self, pads_begin: Sequence[int], pads_end: Sequence[int], value: float | Sequence[float],
            mode: PaddingMode) -> PreProcessSteps:
        return self._add(st.pad([int(v) for v in pads_begin], [int(v) for v in pads_end], _floats(value), mode))

    def reverse_channels(self) -> PreProcessSteps:
        return self._add(st.reverse_channels())

    def custom(self, operation: Callable[[Output], Any]) -> PreProcessSteps:
        """``operation(output) -> output``: any ops of the user's."""
        return self._add(st.custom(operation))

    # --- used by build
    def propagate_layout(self, tensor_layout: Layout) -> Layout:
        """The model layout implied by the tensor layout and the layout conversions."""
        res = self._last_layout if self._last_layout is not None else tensor_layout
        for dims in self._forward_converts:
            res = apply_permutation(res, dims)
        return res

    def calculate_param_shape(self, model_shape: PartialShape, model_layout: Layout) -> tuple[PartialShape, Layout]:
        """Shape and layout of the user's tensor undoing the permutations by index."""
        if model_shape.rank.is_dynamic:
            return model_shape, model_layout
        layout, dims = model_layout, list(model_shape)
        for convert in self._layout_converts:
            old, dims = dims, [Dimension() for _ in dims]
            back = list(convert)
            for i, c in enumerate(convert):
                if c >= len(dims):
                    raise RuntimeError(f"Convert dimension {c} is out of bounds.")
                dims[c] = old[i]
                back[c] = i
            layout = apply_permutation(layout, back)
        return PartialShape(dims), layout


class PostProcessSteps:
    """Steps applied to an output, in the order they are declared."""

    def __init__(self) -> None:
        self.actions: list[Action] = []

    def _add(self, action: Action) -> PostProcessSteps:
        self.actions.append(action)
        return self

    def convert_element_type(self, type: Type | Any = None) -> PostProcessSteps:  # noqa: A002
        """Convert; without an argument, to the element type set with ``tensor().set_element_type``."""
        return self._add(st.post_convert_element_type(Type.dynamic if type is None else _type(type)))

    def convert_layout(self, dst_layout: Layout | str | Sequence[int] | None = None) -> PostProcessSteps:
        if dst_layout is not None and not isinstance(dst_layout, (Layout, str)):
            dims = [int(d) for d in dst_layout]
            if not dims:
                return self
            return self._add(st.convert_layout_dims(dims))
        return self._add(st.post_convert_layout(Layout() if dst_layout is None else as_layout(dst_layout)))

    def custom(self, operation: Callable[[Output], Any]) -> PostProcessSteps:
        return self._add(st.post_custom(operation))


class InputModelInfo:
    """What the model expects: its layout."""

    def __init__(self) -> None:
        self.layout: Layout | None = None

    def set_layout(self, layout: Layout | str) -> InputModelInfo:
        self.layout = as_layout(layout)
        return self


class OutputModelInfo(InputModelInfo):
    """What the model produces: its layout."""


class OutputTensorInfo:
    """What the user gets back: element type and layout."""

    def __init__(self) -> None:
        self.element_type: Type | None = None
        self.layout: Layout | None = None

    def set_element_type(self, type: Type | Any) -> OutputTensorInfo:  # noqa: A002
        self.element_type = _type(type)
        return self

    def set_layout(self, layout: Layout | str) -> OutputTensorInfo:
        self.layout = as_layout(layout)
        return self


class InputInfo:
    """``ppp.input(...)``: ``tensor()``, ``preprocess()``, ``model()``."""

    def __init__(self) -> None:
        self._tensor, self._steps, self._model = InputTensorInfo(), PreProcessSteps(), InputModelInfo()

    def tensor(self) -> InputTensorInfo:
        return self._tensor

    def preprocess(self) -> PreProcessSteps:
        return self._steps

    def model(self) -> InputModelInfo:
        return self._model


class OutputInfo:
    """``ppp.output(...)``: ``tensor()``, ``postprocess()``, ``model()``."""

    def __init__(self) -> None:
        self._tensor, self._steps, self._model = OutputTensorInfo(), PostProcessSteps(), OutputModelInfo()

    def tensor(self) -> OutputTensorInfo:
        return self._tensor

    def postprocess(self) -> PostProcessSteps:
        return self._steps

    def model(self) -> OutputModelInfo:
        return self._model
