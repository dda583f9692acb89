"""``PrePostProcessor``: declare how user tensors differ from what the model takes, then ``build()``."""

from __future__ import annotations

import io

from vinerun.errors import ValidationError, VinerunError
from vinerun.ir.core_ops import Parameter, Result
from vinerun.ir.model import Model
from vinerun.preprocess.build import ModelGuard, build_inputs, build_output, dump_input, dump_output
from vinerun.preprocess.info import InputInfo, OutputInfo


class PrePostProcessor:
    """Pre- and post-processing built into the model as ordinary ops.

    >>> ppp = PrePostProcessor(model)
    >>> ppp.input().tensor().set_element_type(Type.u8).set_layout(Layout("NHWC"))
    >>> ppp.input().preprocess().convert_element_type(Type.f32).mean([123.7, 116.3, 103.5])
    >>> ppp.input().model().set_layout(Layout("NCHW"))
    >>> print(ppp)                       # the steps, with the tensor before and after each
    >>> model = ppp.build()              # takes u8 NHWC images now
    """

    def __init__(self, model: Model):
        if model is None:
            raise ValidationError("Function can't be nullptr for PrePostProcessor")
        self._model = model
        self._inputs: list[tuple[Parameter, InputInfo]] = [(p, InputInfo()) for p in model.get_parameters()]
        self._outputs: list[tuple[Result, OutputInfo]] = [(r, OutputInfo()) for r in model.get_results()]

    def input(self, key: int | str | None = None) -> InputInfo:
        """The input by index or tensor name (no key: the only input)."""
        if key is None:
            if len(self._inputs) != 1:
                raise ValidationError(f"PrePostProcessor::input() - Model must have exactly one input, got "
                                      f"{len(self._inputs)}")
            return self._inputs[0][1]
        if isinstance(key, str):
            for param, info in self._inputs:
                if key in param.output(0).get_names():
                    return info
            raise ValidationError(f"Model doesn't have input with name {key}")
        index = int(key)
        if not 0 <= index < len(self._inputs):
            raise ValidationError(f"PrePostProcessor::input(size_t) - Model doesn't have input with index {index}. "
                                  f"Total number of inputs is {len(self._inputs)}")
        return self._inputs[index][1]

    def output(self, key: int | str | None = None) -> OutputInfo:
        """The output by index or tensor name (no key: the only output)."""
        if key is None:
            if len(self._outputs) != 1:
                raise ValidationError(f"PrePostProcessor::output() - Model must have exactly one output, got "
                                      f"{len(self._outputs)}")
            return self._outputs[0][1]
        if isinstance(key, str):
            for result, info in self._outputs:
                if key in result.output(0).get_names():
                    return info
            raise ValidationError(f"Model doesn't have output with name {key}")
        index = int(key)
        if not 0 <= index < len(self._outputs):
            raise ValidationError(f"PrePostProcessor::output(size_t) - Model doesn't have output with index "
                                  f"{index}. Total number of outputs is {len(self._outputs)}")
        return self._outputs[index][1]

    def build(self) -> Model:
        """Insert the ops into the model (in place) and return it; on failure the model is left unchanged."""
        guard = ModelGuard(self._model)
        try:
            build_inputs(self._model, self._inputs)
            self._model.validate_nodes_and_infer_types()
            for result, out_info in self._outputs:
                build_output(result, out_info)
            self._model.validate_nodes_and_infer_types()
        except BaseException:
            guard.restore()
            raise
        return self._model

    def dump(self) -> str:
        """The pre/post-processing, step by step, as OpenVINO prints it (nothing is built into the model)."""
        out = io.StringIO()
        try:
            for param, info in self._inputs:
                dump_input(out, self._model, param, info)
            for result, out_info in self._outputs:
                dump_output(out, result, out_info)
        except (VinerunError, RuntimeError, ValueError) as e:
            out.write(f"\nError occurred: {e}")
        return out.getvalue()

    def __str__(self) -> str:
        return self.dump()

    def __repr__(self) -> str:
        return f"<PrePostProcessor: {self.dump()}>"
