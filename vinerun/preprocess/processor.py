"""``PrePostProcessor``: declare how user tensors differ from what the model takes, then ``build()``."""

from __future__ import annotations

from typing import Any

from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.model import Model
from vinerun.preprocess.build import build_input, build_output
from vinerun.preprocess.info import InputInfo, OutputInfo


class PrePostProcessor:
    """Pre- and post-processing built into the model as ordinary ops.

    >>> ppp = PrePostProcessor(model)
    >>> ppp.input().tensor().set_element_type(Type.u8).set_layout(Layout("NHWC"))
    >>> ppp.input().preprocess().convert_element_type(Type.f32).mean([123.7, 116.3, 103.5])
    >>> ppp.input().model().set_layout(Layout("NCHW"))
    >>> model = ppp.build()              # takes u8 NHWC images now
    """

    def __init__(self, model: Model):
        self._model = model
        self._inputs: dict[int, tuple[Parameter, InputInfo]] = {}
        self._outputs: dict[int, tuple[Result, OutputInfo]] = {}

    def input(self, key: Any = None) -> InputInfo:
        """The input by index, tensor name or port (no key: the only input)."""
        param = self._model.input(key).node
        slot = self._inputs.setdefault(id(param), (param, InputInfo()))  # type: ignore[arg-type]
        return slot[1]

    def output(self, key: Any = None) -> OutputInfo:
        """The output by index, tensor name or port (no key: the only output)."""
        result = self._model.output(key).node
        slot = self._outputs.setdefault(id(result), (result, OutputInfo()))  # type: ignore[arg-type]
        return slot[1]

    def build(self) -> Model:
        """Insert the ops into the model (in place) and return it."""
        for param, info in self._inputs.values():
            build_input(self._model, param, info)
        for result, out_info in self._outputs.values():
            build_output(self._model, result, out_info)
        self._model.validate_nodes_and_infer_types()
        self._inputs.clear()
        self._outputs.clear()
        return self._model

    def __repr__(self) -> str:
        return (f"<PrePostProcessor: '{self._model.friendly_name}', {len(self._inputs)} inputs, "
                f"{len(self._outputs)} outputs>")
