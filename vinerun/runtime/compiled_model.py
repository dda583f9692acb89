"""``CompiledModel``: a model compiled for a device, as OpenVINO's Python API exposes it."""

from __future__ import annotations

import io
from typing import Any

from vinerun.ir.model import Model
from vinerun.ir.node import ConstOutput
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
        self._infer_request: InferRequest | None = None

    # A compiled model's ports are read-only views: OpenVINO's ConstOutput (equal to the model's Output).
    @property
    def inputs(self) -> list[ConstOutput]:
        return [ConstOutput(o.node, o.index) for o in self._impl.inputs]

    @property
    def outputs(self) -> list[ConstOutput]:
        return [ConstOutput(o.node, o.index) for o in self._impl.outputs]

    def input(self, key: Any = None) -> ConstOutput:
        o = self._impl.model.input(key)
        return ConstOutput(o.node, o.index)

    def output(self, key: Any = None) -> ConstOutput:
        o = self._impl.model.output(key)
        return ConstOutput(o.node, o.index)

    def create_infer_request(self) -> InferRequest:
        return InferRequest(self)

    def __call__(self, inputs: Any = None, share_inputs: bool = True, share_outputs: bool = False, *,
                 decode_strings: bool = True) -> InferResult:
        """Run on an internal request that is reused between calls."""
        if self._infer_request is None:
            self._infer_request = self.create_infer_request()
        return self._infer_request.infer(inputs, share_inputs=share_inputs, share_outputs=share_outputs,
                                         decode_strings=decode_strings)

    def query_state(self) -> list[VariableState]:
        """The variables of the internal request that ``__call__`` uses (created if needed)."""
        if self._infer_request is None:
            self._infer_request = self.create_infer_request()
        return self._infer_request.query_state()

    def reset_state(self) -> None:
        """Reset every variable of the internal request to its initial value."""
        if self._infer_request is not None:
            self._infer_request.reset_state()

    def infer_new_request(self, inputs: Any = None) -> InferResult:
        return self.create_infer_request().infer(inputs)

    def get_property(self, key: str) -> Any:
        """The value of a property of the compiled model (``props.model_name``, ``SUPPORTED_PROPERTIES``...)."""
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

    def set_property(self, config: Any) -> None:
        """Set RW properties: a dict, one ``key(value)`` pair or a list of pairs."""
        from vinerun.runtime.core import normalize_config

        self._impl.set_property(normalize_config(config))

    def release_memory(self) -> None:
        """Free the memory the compiled model holds for intermediate results between inferences (the
        device's own when it keeps any); requests allocate again on their next run, as in OpenVINO."""
        release = getattr(self._impl, "release_memory", None)
        if release is not None:
            release()

    def get_runtime_model(self) -> Model:
        return self._impl.get_runtime_model()

    def get_context(self) -> Any:
        """The device's ``RemoteContext`` this model runs in (devices with device memory: GPU)."""
        found = getattr(self._impl, "get_context", None)
        if found is None:
            from vinerun.errors import NotSupportedError

            raise NotSupportedError(f"Not Implemented:\nget_context is not supported by the "
                                    f"{self._impl.device_name} compiled model (it has no device memory)")
        return found()

    def __repr__(self) -> str:
        return f"<CompiledModel: device {self._impl.device_name}, inputs {self.inputs}, outputs {self.outputs}>"
