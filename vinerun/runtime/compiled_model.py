"""``CompiledModel``: a model compiled for a device, as OpenVINO's Python API exposes it."""

from __future__ import annotations

import io
from typing import Any

from vinerun.ir.model import Model
from vinerun.ir.node import Output
from vinerun.plugin_api.compiled_model import ICompiledModel
from vinerun.plugin_api.variable_state import VariableState
from vinerun.runtime.infer_request import InferRequest
from vinerun.runtime.results import InferResult


class CompiledModel:
    """A compiled model. Call it like a function, or create infer requests.

    >>> compiled = core.compile_model(model, "CPU")
    >>> compiled({"data": x})[compiled.output(0)]
    """

    #: True when CACHE_DIR supplied this model (the ``LOADED_FROM_CACHE`` property)
    _loaded_from_cache = False

    def __init__(self, impl: ICompiledModel):
        self._impl = impl
        self._request: InferRequest | None = None

    @property
    def inputs(self) -> list[Output]:
        return self._impl.inputs

    @property
    def outputs(self) -> list[Output]:
        return self._impl.outputs

    def input(self, key: Any = None) -> Output:
        return self._impl.model.input(key)

    def output(self, key: Any = None) -> Output:
        return self._impl.model.output(key)

    def create_infer_request(self) -> InferRequest:
        return InferRequest(self)

    def __call__(self, inputs: Any = None, share_inputs: bool = True, share_outputs: bool = False,
                 decode_strings: bool = True) -> InferResult:
        """Run on an internal request that is reused between calls."""
        if self._request is None:
            self._request = self.create_infer_request()
        return self._request.infer(inputs, share_inputs=share_inputs, share_outputs=share_outputs)

    def query_state(self) -> list[VariableState]:
        """The variables of the internal request that ``__call__`` uses (created if needed)."""
        if self._request is None:
            self._request = self.create_infer_request()
        return self._request.query_state()

    def reset_state(self) -> None:
        """Reset every variable of the internal request to its initial value."""
        if self._request is not None:
            self._request.reset_state()

    def infer_new_request(self, inputs: Any = None) -> InferResult:
        return self.create_infer_request().infer(inputs)

    def get_property(self, key: str) -> Any:
        if str(key) == "LOADED_FROM_CACHE":
            return self._loaded_from_cache
        if str(key) == "SUPPORTED_PROPERTIES":
            return {**self._impl.get_property("SUPPORTED_PROPERTIES"), "LOADED_FROM_CACHE": "RO"}
        return self._impl.get_property(str(key))

    def export_model(self, model_stream: Any = None) -> io.BytesIO | None:
        """The compiled model as a blob for ``Core.import_model``: a new ``io.BytesIO``, or, given a
        stream, written to it (which is then rewound, as OpenVINO does)."""
        from vinerun.runtime.blob import export_chunks

        stream = io.BytesIO() if model_stream is None else model_stream
        for chunk in export_chunks(self._impl):
            stream.write(chunk)
        stream.seek(0)
        return stream if model_stream is None else None

    def set_property(self, config: dict[str, Any]) -> None:
        self._impl.set_property({str(k): v for k, v in config.items()})

    def get_runtime_model(self) -> Model:
        return self._impl.get_runtime_model()

    def __repr__(self) -> str:
        return f"<CompiledModel: device {self._impl.device_name}, inputs {self.inputs}, outputs {self.outputs}>"
